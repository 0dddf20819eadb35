/**
 * Onion session keys made ahead: for each first hop a payer sends through, a stock of session
 * keys e with their ephemeral keys e·G and their shared points e·P with that hop, the
 * multiplications made on the curve worker (`crypto/made-ahead.ts`). Taking one saves
 * `send_payment` the two point multiplications of the onion's first layer (~70 µs of its ~100 µs
 * for a one-hop onion; the layers after it depend on the route). At 64 payments in flight the
 * payer's thread made 64 onions a cycle while the other core waited; now that core makes their
 * first layers.
 *
 * `take` never waits: with no stock (the first payment through a hop, or a burst that ran it
 * dry) it answers undefined and the onion is made as before. The session keys are drawn here, on
 * the node's thread (a random scalar each); each triple is handed out once and only ever lives in
 * this process's memory, and after a restart the stock is made anew. A hop's first request is 8
 * triples and each refill doubles it, up to `batch`: a hop paid through once costs the worker 8,
 * not 128. At most `maxPeers` hops keep a stock.
 */
import { randomBytes } from 'node:crypto';
import { bytesToHex } from '../../codec/index.ts';
import {
  type CurveJob,
  type CurveWorker,
  isValidSecretKey,
  MadeAhead,
  startCurveWorker,
} from '../../crypto/index.ts';

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

export interface SessionKeyPoolOptions {
  /** Triples made per request (default 128). */
  batch?: number;
  /** A hop's stock is refilled once it is below this (default 64). */
  lowWater?: number;
  /** Hops that keep a stock (default 64); past it, the stock of the hop used least recently goes. */
  maxPeers?: number;
  /** Told once when the worker cannot make keys (its reason); the pool then stays empty. */
  onUnavailable?: (reason: string) => void;
  /** The curve worker (default: a thread of its own, started at the first request). */
  worker?: CurveWorker;
}

export class SessionKeyPool implements SessionKeySource {
  private readonly made: MadeAhead<FirstLayer>;

  constructor(o: SessionKeyPoolOptions = {}) {
    this.made = new MadeAhead({
      worker: o.worker ?? startCurveWorker(),
      batch: o.batch ?? 128,
      firstBatch: 8,
      lowWater: o.lowWater ?? 64,
      maxKeys: o.maxPeers ?? 64,
      onUnavailable: o.onUnavailable,
    });
  }

  take(firstHop: Uint8Array): FirstLayer | undefined {
    if (firstHop.length !== 33) return undefined;
    return this.made.take(bytesToHex(firstHop), (count) => sessionKeyJob(firstHop.slice(), count));
  }

  /** Triples in stock for a hop (the tests read it). */
  stocked(firstHop: Uint8Array): number {
    return this.made.stocked(bytesToHex(firstHop));
  }

  stop(): void {
    this.made.stop();
  }
}

/** `count` session keys drawn now; e·G and e·P for the hop from the worker. */
function sessionKeyJob(firstHop: Uint8Array, count: number): CurveJob<FirstLayer> {
  const scalars = new Uint8Array(count * 32);
  for (let i = 0; i < count; i++) {
    let e = randomBytes(32);
    // A scalar of 0 or ≥ n (probability ~2⁻¹²⁸) is drawn again.
    while (!isValidSecretKey(e)) e = randomBytes(32);
    scalars.set(e, i * 32);
  }
  return {
    scalars,
    point: firstHop,
    build: (kG, kP) =>
      Array.from({ length: count }, (_, i) => ({
        firstHop,
        sessionKey: scalars.slice(i * 32, i * 32 + 32),
        alpha: kG.subarray(i * 33, i * 33 + 33),
        point: kP!.subarray(i * 33, i * 33 + 33),
      })),
  };
}
