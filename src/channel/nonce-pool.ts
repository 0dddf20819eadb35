/**
 * Channel nonces made ahead. Every completion a channel makes takes a fresh BIP-327 nonce pair
 * (`advertise`, the round's steps), and its public half is two multiplications of the base point,
 * ~52 µs of the ~65 µs a pair costs; a payment makes ~10 a channel. Here the scalars are drawn on
 * the node's thread as before (`nonceScalars`: fresh randomness with the funding key mixed in),
 * their points are made on the curve worker (`crypto/made-ahead.ts`), and a step finds its pair
 * ready.
 *
 * The rules of a nonce do not change: each pair is handed out once, lives in this process's
 * memory only until then, and is persisted by the step that takes it before its public half is
 * sent, as a pair made on the spot is. After a restart the stock is made anew. With no stock
 * (a channel's first nonces, a burst that ran it dry, no worker) the pair is made on the spot.
 */
import { type CurveJob, type CurveWorker, MadeAhead, musig2Fast } from '../crypto/index.ts';
import { type NoncePair, newNonce } from './musig.ts';
import type { MachineEnv } from './step.ts';

export interface NoncePoolOptions {
  /** The curve worker (default: none, and no pair is made ahead). */
  worker?: CurveWorker;
  /** Pairs asked for at most in one request (default 32); a key's first request asks for 4. */
  batch?: number;
  /** A key's stock is refilled once it is below this (default 8). */
  lowWater?: number;
  /** Funding keys that keep a stock (default 256). */
  maxKeys?: number;
  /** Told once when the worker cannot make points (its reason). */
  onUnavailable?: (reason: string) => void;
}

export class NoncePool {
  private readonly made?: MadeAhead<NoncePair>;

  constructor(o: NoncePoolOptions = {}) {
    if (o.worker)
      this.made = new MadeAhead({
        worker: o.worker,
        batch: o.batch ?? 32,
        firstBatch: 4,
        lowWater: o.lowWater ?? 8,
        maxKeys: o.maxKeys ?? 256,
        onUnavailable: o.onUnavailable,
      });
  }

  /** A pair made ahead for the funding key `pubkey` (its secret `secret`), if there is one. */
  take(pubkey: Uint8Array, secret: Uint8Array): NoncePair | undefined {
    return this.made?.take(keyOf(pubkey), (count) => nonceJob(pubkey, secret, count));
  }

  /** Pairs in stock for a funding key (the tests read it). */
  stocked(pubkey: Uint8Array): number {
    return this.made?.stocked(keyOf(pubkey)) ?? 0;
  }

  /** Pairs handed out from stock, and takes that found none. */
  get hits(): number {
    return this.made?.hits ?? 0;
  }

  get misses(): number {
    return this.made?.misses ?? 0;
  }

  stop(): void {
    this.made?.stop();
  }
}

const keyOf = (pubkey: Uint8Array) => Buffer.from(pubkey).toString('hex');

/** `count` pairs: their scalars drawn now, their points k1·G ‖ k2·G from the worker. */
function nonceJob(pubkey: Uint8Array, secret: Uint8Array, count: number): CurveJob<NoncePair> {
  const drawn = Array.from({ length: count }, () => musig2Fast.nonceScalars(pubkey, secret));
  const scalars = new Uint8Array(count * 64);
  drawn.forEach(({ k1, k2 }, i) => {
    scalars.set(k1, i * 64);
    scalars.set(k2, i * 64 + 32);
  });
  const pk = pubkey.slice();
  return {
    scalars,
    build: (kG) =>
      drawn.map(({ k1, k2 }, i) => musig2Fast.nonceOf(k1, k2, pk, kG.subarray(i * 66, i * 66 + 66))),
  };
}

/** The machine's nonce source: a pair made ahead when there is one, else one made now. */
export function madeAheadOr(pool: NoncePool): NonNullable<MachineEnv['nonce']> {
  return (pubkey, secret) => pool.take(pubkey, secret) ?? newNonce(pubkey, secret);
}
