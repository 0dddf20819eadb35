/**
 * k·G for batches of scalars, on another thread (`base-mult-worker.mjs`), for work that can be
 * made ahead of its use (the channels' nonces, `channel/nonce-pool.ts`). The worker starts at the
 * first request and does not keep the process alive.
 */
import { Worker } from 'node:worker_threads';

export type BaseMultAnswer =
  | { id: number; points: Uint8Array }
  | { id: number; failed: string }
  | { unavailable: string };

/** The other side of the thread, as the tests replace it. */
export interface BaseMultiplier {
  /** Asks for k·G of each 32-byte scalar of `scalars`; the answer carries `id`. */
  post(id: number, scalars: Uint8Array): void;
  onAnswer(handler: (answer: BaseMultAnswer) => void): void;
  stop(): void;
}

export function workerBaseMultiplier(): BaseMultiplier {
  let worker: Worker | undefined;
  let handler: (a: BaseMultAnswer) => void = () => {};
  const started = (): Worker => {
    if (worker) return worker;
    worker = new Worker(new URL('./base-mult-worker.mjs', import.meta.url));
    worker.unref();
    worker.on('message', (a: BaseMultAnswer) => handler(a));
    // A worker that dies answers nothing more: its users make their points themselves.
    worker.on('error', (e) => handler({ unavailable: `the thread failed: ${e.message}` }));
    return worker;
  };
  return {
    post: (id, scalars) => started().postMessage({ id, scalars }, [scalars.buffer as ArrayBuffer]),
    onAnswer: (h) => {
      handler = h;
    },
    stop: () => void worker?.terminate(),
  };
}
