/**
 * Onion session keys made ahead, on another thread (`session-keys-worker.mjs`): for each first
 * hop a payer sends through, a stock of session keys e with their ephemeral keys e·G and their
 * shared points e·P with that hop. Taking one saves `send_payment` the two point multiplications
 * of the onion's first layer (~70 µs of its ~100 µs for a one-hop onion; the layers after it
 * depend on the route). At 64 payments in flight the payer's thread made 64 onions a cycle while
 * the other core waited; now that core makes their first layers.
 *
 * `take` never waits: with no stock (the first payment through a hop, or a burst that ran it
 * dry) it answers undefined and the onion is made as before. Each triple is handed out once and
 * only ever lives in this process's memory; after a restart the stock is made anew. The stock
 * of a hop is refilled once it runs below `lowWater`, in batches that start at 8 and double with
 * each refill up to `batch`: a hop paid through once costs the worker 8 triples, not 128. A node
 * that stops paying through a hop leaves its stock idle, and at most `maxPeers` hops keep one.
 */
import { Worker } from 'node:worker_threads';
import { bytesToHex } from '../../codec/index.ts';

/** A session key whose first layer is made: e, e·G and e·P for the first hop P. */
export interface FirstLayer {
  /** P, compressed. */
  firstHop: Uint8Array;
  sessionKey: Uint8Array;
  /** e·G, compressed: the packet's ephemeral key. */
  alpha: Uint8Array;
  /** e·P, compressed: its SHA-256 is the first hop's shared secret. */
  point: Uint8Array;
}

export interface SessionKeySource {
  /** A session key made ahead for an onion whose first hop is `firstHop` (33 bytes), if any. */
  take(firstHop: Uint8Array): FirstLayer | undefined;
}

/** The other side of the pool, as the tests replace it. */
export interface KeyMaker {
  post(peer: Uint8Array, count: number): void;
  onAnswer(handler: (answer: KeyAnswer) => void): void;
  stop(): void;
}

export type KeyAnswer =
  | { peer: Uint8Array; keys: Uint8Array; alphas: Uint8Array; points: Uint8Array }
  | { peer: Uint8Array; failed: string }
  | { unavailable: string };

export interface SessionKeyPoolOptions {
  /** Triples made per request (default 128). */
  batch?: number;
  /** A hop's stock is refilled once it is below this (default 64). */
  lowWater?: number;
  /** Hops that keep a stock (default 64); past it, the stock of the hop used least recently goes. */
  maxPeers?: number;
  /** Told once when the worker cannot make keys (its reason); the pool then stays empty. */
  onUnavailable?: (reason: string) => void;
  /** The key maker (default: the worker thread). */
  maker?: KeyMaker;
}

interface Stock {
  triples: FirstLayer[];
  requested: boolean;
  /** The size of this hop's next request. */
  next: number;
}

/** The first request for a hop: small, since most hops may be paid through once. */
const FIRST_BATCH = 8;

export class SessionKeyPool implements SessionKeySource {
  private readonly stocks = new Map<string, Stock>();
  private readonly maker: KeyMaker;
  private readonly batch: number;
  private readonly lowWater: number;
  private readonly maxPeers: number;
  private unavailable = false;

  constructor(private readonly o: SessionKeyPoolOptions = {}) {
    this.batch = o.batch ?? 128;
    this.lowWater = o.lowWater ?? 64;
    this.maxPeers = o.maxPeers ?? 64;
    this.maker = o.maker ?? workerKeyMaker();
    this.maker.onAnswer((a) => this.answered(a));
  }

  take(firstHop: Uint8Array): FirstLayer | undefined {
    if (this.unavailable || firstHop.length !== 33) return undefined;
    const peer = bytesToHex(firstHop);
    let stock = this.stocks.get(peer);
    if (stock) {
      // Most recently used last: the eviction takes the first.
      this.stocks.delete(peer);
      this.stocks.set(peer, stock);
    } else {
      if (this.stocks.size >= this.maxPeers) this.stocks.delete(this.stocks.keys().next().value as string);
      stock = { triples: [], requested: false, next: Math.min(FIRST_BATCH, this.batch) };
      this.stocks.set(peer, stock);
    }
    const triple = stock.triples.shift();
    if (stock.triples.length < this.lowWater && !stock.requested) {
      stock.requested = true;
      this.maker.post(firstHop.slice(), stock.next);
      stock.next = Math.min(stock.next * 2, this.batch);
    }
    return triple;
  }

  /** Triples in stock for a hop (the tests read it). */
  stocked(firstHop: Uint8Array): number {
    return this.stocks.get(bytesToHex(firstHop))?.triples.length ?? 0;
  }

  stop(): void {
    this.stocks.clear();
    this.maker.stop();
  }

  private answered(a: KeyAnswer): void {
    if ('unavailable' in a) {
      this.unavailable = true;
      this.stocks.clear();
      this.o.onUnavailable?.(a.unavailable);
      return;
    }
    const stock = this.stocks.get(bytesToHex(a.peer));
    if (!stock) return; // evicted meanwhile
    stock.requested = false;
    if ('failed' in a) return;
    const n = a.keys.length / 32;
    for (let i = 0; i < n; i++)
      stock.triples.push({
        firstHop: a.peer,
        sessionKey: a.keys.subarray(i * 32, i * 32 + 32),
        alpha: a.alphas.subarray(i * 33, i * 33 + 33),
        point: a.points.subarray(i * 33, i * 33 + 33),
      });
  }
}

/**
 * The worker thread as a key maker, started at the first request (a node that never pays never
 * starts it); it does not keep the process alive.
 */
function workerKeyMaker(): KeyMaker {
  let worker: Worker | undefined;
  let handler: (a: KeyAnswer) => void = () => {};
  const started = (): Worker => {
    if (worker) return worker;
    worker = new Worker(new URL('./session-keys-worker.mjs', import.meta.url));
    worker.unref();
    worker.on('message', (a: KeyAnswer) => handler(a));
    // A worker that dies leaves the pool without stock: payments make their onions themselves.
    worker.on('error', () => {});
    return worker;
  };
  return {
    post: (peer, count) => started().postMessage({ peer, count }),
    onAnswer: (h) => {
      handler = h;
    },
    stop: () => void worker?.terminate(),
  };
}
