/**
 * Curve work made ahead, per key, on another thread (`curve-worker.mjs`). A user (the channels'
 * nonce pool, the payer's onion session keys) draws its secret scalars on its own thread when a
 * key's stock runs low; the worker multiplies them (k·G, and k·P for the key's point P when
 * asked), and the finished items wait in the key's stock until taken.
 *
 * `take` never waits: with no stock (a key's first use, a burst that ran it dry, no worker) it
 * answers undefined and the caller does the work itself. Each item is handed out once and lives
 * only in this process's memory. A key's stock is refilled once it is below `lowWater`, one
 * request at a time, in batches that start at `firstBatch` and double up to `batch`: a key used
 * once costs the worker a few items, not a full batch. At most `maxKeys` keys keep a stock; the
 * one used least recently gives its place, and what was asked for it is dropped on arrival.
 */
import { Worker } from 'node:worker_threads';

export type CurveWorkAnswer =
  | { id: number; kG: Uint8Array; kP?: Uint8Array }
  | { id: number; failed: string }
  | { unavailable: string };

/** The worker thread's side, as the tests replace it. */
export interface CurveWorker {
  /** k·G of each 32-byte scalar of `scalars`, and k·`point` too when given; answered with `id`. */
  post(id: number, scalars: Uint8Array, point?: Uint8Array): void;
  onAnswer(handler: (answer: CurveWorkAnswer) => void): void;
  stop(): void;
}

/** A request for `count` items: the scalars to multiply and how the answer becomes the items. */
export interface CurveJob<T> {
  /** count × m scalars of 32 bytes (m per item), drawn by the caller. */
  scalars: Uint8Array;
  point?: Uint8Array;
  /** The items, from k·G (and k·P) of each scalar, 33 bytes each, in the scalars' order. */
  build(kG: Uint8Array, kP?: Uint8Array): T[];
}

export interface MadeAheadOptions {
  worker: CurveWorker;
  /** Items asked for at most in one request. */
  batch: number;
  /** A key's first request. */
  firstBatch: number;
  /** A key's stock is refilled once it is below this. */
  lowWater: number;
  /** Keys that keep a stock. */
  maxKeys: number;
  /** Told once when the worker cannot do the work (its reason); the stocks then stay empty. */
  onUnavailable?: (reason: string) => void;
}

interface Stock<T> {
  items: T[];
  /** A request of this key is out. */
  requested: boolean;
  /** The size of this key's next request. */
  next: number;
}

export class MadeAhead<T> {
  private readonly stocks = new Map<string, Stock<T>>();
  private readonly pending = new Map<number, { key: string; job: CurveJob<T> }>();
  private nextId = 1;
  private unavailable = false;
  /** Items handed out from stock, and takes that found none (read by the tests). */
  hits = 0;
  misses = 0;

  constructor(private readonly o: MadeAheadOptions) {
    o.worker.onAnswer((a) => this.answered(a));
  }

  /** An item of `key`'s stock, if there is one; `job` draws a request's scalars when one is due. */
  take(key: string, job: (count: number) => CurveJob<T>): T | undefined {
    if (this.unavailable) return undefined;
    let stock = this.stocks.get(key);
    if (stock) {
      // Most recently used last: the eviction takes the first.
      this.stocks.delete(key);
      this.stocks.set(key, stock);
    } else {
      if (this.stocks.size >= this.o.maxKeys) this.stocks.delete(this.stocks.keys().next().value as string);
      stock = { items: [], requested: false, next: Math.min(this.o.firstBatch, this.o.batch) };
      this.stocks.set(key, stock);
    }
    const item = stock.items.shift();
    if (item === undefined) this.misses++;
    else this.hits++;
    if (stock.items.length < this.o.lowWater && !stock.requested) {
      const count = stock.next;
      stock.next = Math.min(stock.next * 2, this.o.batch);
      stock.requested = true;
      const j = job(count);
      const id = this.nextId++;
      this.pending.set(id, { key, job: j });
      this.o.worker.post(id, j.scalars, j.point);
    }
    return item;
  }

  /** Items in `key`'s stock (the tests read it). */
  stocked(key: string): number {
    return this.stocks.get(key)?.items.length ?? 0;
  }

  stop(): void {
    this.stocks.clear();
    this.pending.clear();
    this.o.worker.stop();
  }

  private answered(a: CurveWorkAnswer): void {
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
    stock.items.push(...p.job.build(a.kG, a.kP));
  }
}

/** A thread running `curve-worker.mjs`, started at the first message; it does not keep the process alive. */
export interface CurveThread<A> {
  send(message: object): void;
  onAnswer(handler: (answer: A | { unavailable: string }) => void): void;
  stop(): void;
}

export function curveThread<A>(): CurveThread<A> {
  let worker: Worker | undefined;
  let handler: (a: A | { unavailable: string }) => void = () => {};
  const started = (): Worker => {
    if (worker) return worker;
    worker = new Worker(new URL('./curve-worker.mjs', import.meta.url));
    worker.unref();
    worker.on('message', (a: A) => handler(a));
    // A worker that dies answers nothing more: its users do their work themselves.
    worker.on('error', (e) => handler({ unavailable: `the thread failed: ${e.message}` }));
    return worker;
  };
  return {
    // Copied to the thread, not transferred: the sender may keep using what it sent.
    send: (message) => started().postMessage(message),
    onAnswer: (h) => {
      handler = h;
    },
    stop: () => void worker?.terminate(),
  };
}

/** The worker thread of a `MadeAhead`. */
export function startCurveWorker(): CurveWorker {
  const thread = curveThread<CurveWorkAnswer>();
  return {
    // The job keeps its scalars to build the items.
    post: (id, scalars, point) => thread.send({ id, scalars, point }),
    onAnswer: (h) => thread.onAnswer(h),
    stop: () => thread.stop(),
  };
}
