/**
 * Channel nonces made ahead. Every completion a channel makes takes a fresh BIP-327 nonce pair
 * (`advertise`, the round's steps), and its public half is two multiplications of the base point,
 * ~52 µs of the ~65 µs a pair costs. One at a time over two hops a payment makes sixteen of them
 * on its path. Here the scalars are drawn on the node's thread as before (`nonceScalars`: fresh
 * randomness with the funding key mixed in), and their points are made on another thread
 * (`crypto/base-mult.ts`), so a step finds its pair ready.
 *
 * The rules of a nonce do not change: each pair is handed out once, lives in this process's
 * memory only until then, and is persisted by the step that takes it before its public half is
 * sent, as a pair made on the spot is. After a restart the stock is made anew. `take` never
 * waits: with no stock (a channel's first nonces, a burst that ran it dry, no worker) it answers
 * undefined and the caller makes the pair itself. At most `maxKeys` funding keys keep a stock;
 * the one used least recently gives its place.
 */
import { type BaseMultAnswer, type BaseMultiplier, musig2Fast } from '../crypto/index.ts';
import { type NoncePair, newNonce } from './musig.ts';
import type { MachineEnv } from './step.ts';

export interface NoncePoolOptions {
  /** The other thread (default: none, and `take` always answers undefined). */
  maker?: BaseMultiplier;
  /** Pairs asked for at most in one request (default 32); a key's first request asks for 4. */
  batch?: number;
  /** A key's stock is refilled once it is below this (default 8). */
  lowWater?: number;
  /** Funding keys that keep a stock (default 256). */
  maxKeys?: number;
  /** Told once when the other thread cannot make points (its reason). */
  onUnavailable?: (reason: string) => void;
}

interface Stock {
  ready: NoncePair[];
  /** A request of this key is out. */
  requested: boolean;
  /** The size of this key's next request. */
  next: number;
}

interface Pending {
  key: string;
  pubkey: Uint8Array;
  scalars: { k1: Uint8Array; k2: Uint8Array }[];
}

const FIRST_BATCH = 4;

export class NoncePool {
  private readonly stocks = new Map<string, Stock>();
  private readonly pending = new Map<number, Pending>();
  private readonly batch: number;
  private readonly lowWater: number;
  private readonly maxKeys: number;
  private nextId = 1;
  private unavailable: boolean;
  /** Pairs handed out from stock, and takes that found none (read by the tests). */
  hits = 0;
  misses = 0;

  constructor(private readonly o: NoncePoolOptions = {}) {
    this.batch = o.batch ?? 32;
    this.lowWater = o.lowWater ?? 8;
    this.maxKeys = o.maxKeys ?? 256;
    this.unavailable = !o.maker;
    o.maker?.onAnswer((a) => this.answered(a));
  }

  /** A pair made ahead for the funding key `pubkey` (its secret `secret`), if there is one. */
  take(pubkey: Uint8Array, secret: Uint8Array): NoncePair | undefined {
    if (this.unavailable) return undefined;
    const key = Buffer.from(pubkey).toString('hex');
    let stock = this.stocks.get(key);
    if (stock) {
      // Most recently used last: the eviction takes the first.
      this.stocks.delete(key);
      this.stocks.set(key, stock);
    } else {
      if (this.stocks.size >= this.maxKeys) this.stocks.delete(this.stocks.keys().next().value as string);
      stock = { ready: [], requested: false, next: Math.min(FIRST_BATCH, this.batch) };
      this.stocks.set(key, stock);
    }
    const pair = stock.ready.shift();
    if (pair) this.hits++;
    else this.misses++;
    if (stock.ready.length < this.lowWater && !stock.requested) this.request(key, stock, pubkey, secret);
    return pair;
  }

  /** Pairs in stock for a funding key (the tests read it). */
  stocked(pubkey: Uint8Array): number {
    return this.stocks.get(Buffer.from(pubkey).toString('hex'))?.ready.length ?? 0;
  }

  stop(): void {
    this.stocks.clear();
    this.pending.clear();
    this.o.maker?.stop();
  }

  private request(key: string, stock: Stock, pubkey: Uint8Array, secret: Uint8Array): void {
    const n = stock.next;
    stock.next = Math.min(stock.next * 2, this.batch);
    stock.requested = true;
    const scalars = Array.from({ length: n }, () => musig2Fast.nonceScalars(pubkey, secret));
    const flat = new Uint8Array(n * 64);
    scalars.forEach(({ k1, k2 }, i) => {
      flat.set(k1, i * 64);
      flat.set(k2, i * 64 + 32);
    });
    const id = this.nextId++;
    this.pending.set(id, { key, pubkey: pubkey.slice(), scalars });
    this.o.maker?.post(id, flat);
  }

  private answered(a: BaseMultAnswer): void {
    if ('unavailable' in a) {
      if (this.unavailable) return;
      this.unavailable = true;
      this.stocks.clear();
      this.pending.clear();
      this.o.onUnavailable?.(a.unavailable);
      return;
    }
    const p = this.pending.get(a.id);
    if (!p) return; // stopped meanwhile
    this.pending.delete(a.id);
    const stock = this.stocks.get(p.key);
    if (!stock) return; // evicted meanwhile: its scalars are dropped, never used
    stock.requested = false;
    if ('failed' in a) return;
    p.scalars.forEach(({ k1, k2 }, i) => {
      stock.ready.push(musig2Fast.nonceOf(k1, k2, p.pubkey, a.points.subarray(i * 66, i * 66 + 66)));
    });
  }
}

/** The machine's nonce source: a pair made ahead when there is one, else one made now. */
export function madeAheadOr(pool: NoncePool): NonNullable<MachineEnv['nonce']> {
  return (pubkey, secret) => pool.take(pubkey, secret) ?? newNonce(pubkey, secret);
}
