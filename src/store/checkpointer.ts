/**
 * WAL checkpoints on a thread of their own.
 *
 * SQLite copies the pages committed to the WAL back into the database file (a checkpoint) when a
 * commit finds the WAL past `wal_autocheckpoint` pages, 1,000 by default, on the connection that
 * commits: the node's thread, and in the turn's COMMIT that runs just before a flush lets the
 * turn's messages out (`turn-transaction.ts`, `durability.ts`). Such a checkpoint writes ~4 MB and
 * flushes the WAL and the database file: ~5 ms on an idle disk here, 10–40 ms when the devnet's
 * nodes flush at once. A forwarder writing ~90 pages a payment met one every ~11 payments, each
 * holding back the message the next node waits for.
 *
 * Here a worker (`checkpoint-worker.mjs`) opens its own connection to the same file and runs a
 * PASSIVE checkpoint every `intervalMs`: it copies what is committed without waiting for the
 * node's connection or making it wait (WAL readers and the writer go on meanwhile). The node's
 * own threshold is raised to `FALLBACK_PAGES`, not removed: if the worker falls behind (a long
 * busy spell, the WAL never wholly copied at the moment of a write) or dies, SQLite checkpoints on
 * the node's thread as before, by then mostly copied already, so the WAL stays bounded.
 * What a checkpoint does to durability does not change: SQLite flushes the WAL before copying and
 * the database after, whichever connection runs it, and a crash mid-way is recovered from the WAL.
 */
import { Worker } from 'node:worker_threads';
import type { SqliteDb } from './db.ts';

/** How often the worker checkpoints, ms. */
export const CHECKPOINT_INTERVAL_MS = 100;

/** The node's own `wal_autocheckpoint` while the worker runs: a bound, not the usual path. */
export const FALLBACK_PAGES = 8000;

/** SQLite's default `wal_autocheckpoint`, restored when the worker cannot run. */
const SQLITE_DEFAULT_PAGES = 1000;

export interface CheckpointStats {
  /** Passes made after the node committed (`data_version` moved). */
  runs: number;
  /** Passes that met another checkpoint running (the node's fallback). */
  busy: number;
  /** Passes that failed (retried at the next tick). */
  errors: number;
  /** The WAL's largest size the worker saw, in frames (pages). */
  maxFrames: number;
  /** The last pass began after the node's latest commit: every committed frame has been copied back. */
  caughtUp: boolean;
}

export interface Checkpointer {
  /** Resolves once the worker has opened its connection (false: it could not; SQLite's default applies). */
  readonly ready: Promise<boolean>;
  stats(): Promise<CheckpointStats>;
  /** Stops the worker and closes its connection (before the node closes its own). */
  stop(): Promise<void>;
}

export interface CheckpointerOptions {
  intervalMs?: number;
  /** The worker could not open the database, or failed: checkpoints are the node's own again. */
  onUnavailable?: (reason: string) => void;
}

/** Starts checkpointing `file` (the database `db` is the node's connection to) on a worker. */
export function startCheckpointer(db: SqliteDb, file: string, opts: CheckpointerOptions = {}): Checkpointer {
  const worker = new Worker(new URL('./checkpoint-worker.mjs', import.meta.url), {
    workerData: { file, intervalMs: opts.intervalMs ?? CHECKPOINT_INTERVAL_MS },
  });
  worker.unref();
  let stopped = false;
  let exited = false;
  worker.on('exit', () => {
    exited = true;
  });
  const ownCheckpoints = (reason: string) => {
    if (db.open) db.pragma(`wal_autocheckpoint = ${SQLITE_DEFAULT_PAGES}`);
    if (!stopped) opts.onUnavailable?.(reason);
  };
  const ready = new Promise<boolean>((resolve) => {
    worker.on('message', (m: { ready?: true; unavailable?: string }) => {
      if (m.ready) {
        if (db.open) db.pragma(`wal_autocheckpoint = ${FALLBACK_PAGES}`);
        resolve(true);
      } else if (m.unavailable !== undefined) {
        ownCheckpoints(m.unavailable);
        resolve(false);
      }
    });
    worker.on('error', (e) => {
      ownCheckpoints(e.message);
      resolve(false);
    });
    worker.on('exit', () => resolve(false));
  });
  /** The worker's next message that has `key`, or undefined once it has exited. */
  const answer = <T>(key: string, send: string): Promise<T | undefined> =>
    new Promise((resolve) => {
      if (exited) {
        resolve(undefined);
        return;
      }
      const onMessage = (m: Record<string, unknown>) => {
        if (!(key in m)) return;
        worker.off('message', onMessage);
        worker.off('exit', onExit);
        resolve(m[key] as T);
      };
      const onExit = () => {
        worker.off('message', onMessage);
        resolve(undefined);
      };
      worker.on('message', onMessage);
      worker.once('exit', onExit);
      worker.postMessage(send);
    });
  return {
    ready,
    stats: async () =>
      (await answer<CheckpointStats>('stats', 'stats')) ?? {
        runs: 0,
        busy: 0,
        errors: 0,
        maxFrames: 0,
        caughtUp: false,
      },
    stop: async () => {
      if (stopped) return;
      stopped = true;
      await answer('stopped', 'stop');
      await worker.terminate();
    },
  };
}
