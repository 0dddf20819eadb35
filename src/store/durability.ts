/**
 * When a committed transaction is on disk, and the gate every outgoing byte waits at.
 *
 * The rule is persist-before-speak: a message, RPC answer or chain transaction that depends on a
 * state may leave the node only once that state would survive a crash. There are three ways to
 * keep it, and the node picks one per store:
 * - `IMMEDIATE_DURABILITY`: every commit is durable when it returns (SQLite with
 *   `synchronous=FULL`, a store without turns), so the gate is open.
 * - `WalDurability` without a WAL file (Postgres, batched by turns: `PgDb.enableTurns`): output is
 *   held until the turn's transaction, committed by `beforeFlush`, has returned; the same gate
 *   and order as below, with no file to flush.
 * - `WalDurability` (SQLite, the default): commits run with `synchronous=NORMAL` (written to the
 *   WAL, not yet flushed) and output is held until one `fdatasync` of the WAL file covers them. One
 *   flush serves every commit made before it started, so under load the cost of an fsync (about
 *   2 ms on this class of disk) is shared by every payment in flight instead of paid per commit —
 *   group commit, as PostgreSQL and LND's batch writer do. Held output leaves in the order it was
 *   offered, so a peer never sees message n+1 before message n.
 * A failed flush means the kernel may have dropped written pages: the node must not speak on state
 * it cannot vouch for, so `onFatal` is told and the node stops (PostgreSQL does the same).
 *
 * Where the flush runs: on a disk that flushes fast (the median of the last `FLUSH_WINDOW` flushes
 * under `syncFlushMaxMs`, 1 ms by default) it runs on the event loop's own thread, in the turn it
 * was asked for; on a slower one, on libuv's thread pool while the node goes on working. Handing
 * a ~0.1 ms flush to another thread and back cost more than the flush itself here: two thread wake-ups, each of
 * which can wait for a core on a busy machine (one channel one at a time: p50 15 → 11 ms). A
 * slow disk must not stop the node from working while it flushes, and there the hand-off is
 * small beside the flush. Flushes on the pool are timed too (hand-off included: an upper
 * bound), so a disk that becomes fast again is flushed inline again. A median, not an average: a
 * shared disk here flushes in ~0.35 ms with a stall of 10–150 ms now and then (another process's
 * journal commit), and one stall pulled a moving average over 1 ms for several flushes, so the
 * placement flapped, every few flushes, between the two places (each pool flush paying the two
 * wake-ups). It takes most of the window's flushes being slow to move. The WAL's checkpoints,
 * which write and flush far more, run on a thread of their own (`checkpointer.ts`).
 */
import fs from 'node:fs';
import type { SqliteDb } from './db.ts';

export interface Durability {
  /**
   * Runs `fn` once every commit made so far is durable (at once when it already is). Held output
   * runs in the order offered, except that what was offered with `first` (peer messages) runs
   * before the rest released by the same flush: the next node's work starts before this node
   * writes its RPC answers and notifications (~0.1 ms each to a waiting client). Order among
   * the `first` ones, and among the others, is kept, so each peer and each client still gets its
   * messages in order.
   */
  whenDurable(fn: () => void, first?: boolean): void;
  /** Resolves once every commit made so far is durable. */
  durable(): Promise<void>;
  /**
   * A flush is wanted at the end of this turn: output is about to be offered (a group commit is
   * scheduled). Asked for now, the flush runs right after that commit in the same turn, before
   * the event loop polls for more input; asked for when the output is offered, it would run only
   * after the next poll, behind whatever input that brings (RPC calls, other peers' messages).
   */
  requestFlush(): void;
  /** Flushes made so far (metrics). */
  readonly syncs: number;
  /** Flushes outstanding work and stops; later output passes straight through. */
  close(): void;
}

/** Every commit is durable when it returns: output is never held. */
export const IMMEDIATE_DURABILITY: Durability = {
  whenDurable: (fn) => fn(),
  durable: () => Promise.resolve(),
  requestFlush: () => {},
  syncs: 0,
  close: () => {},
};

export interface WalDurabilityOptions {
  /**
   * The database's WAL file (`<file>-wal`), flushed to make commits durable. None: the commit
   * that `beforeFlush` makes is durable when it returns (Postgres batched by turns), and the gate
   * only holds output until that commit.
   */
  walFile?: string;
  /** A flush failed: the node must stop without sending anything more. */
  onFatal: (err: Error) => void;
  /** The flush on the thread pool (default `fs.fdatasync`); tests inject failures here. */
  fdatasync?: (fd: number, done: (err: Error | null) => void) => void;
  /** The flush on the event loop's thread (default `fs.fdatasyncSync`). */
  fdatasyncSync?: (fd: number) => void;
  /**
   * Flushes run on the event loop's thread while their moving average stays under this many
   * ms (default `SYNC_FLUSH_MAX_MS`); 0: always on the thread pool.
   */
  syncFlushMaxMs?: number;
  /** A clock in ms, for timing flushes (default `performance.now`). */
  now?: () => number;
  /** Flushes moved to the event loop's thread (`inline`) or to the pool; their median, ms. */
  onPlacement?: (inline: boolean, medianMs: number) => void;
  /**
   * A flush of the WAL file ended after `ms` (metrics). On this class of disk a flush takes
   * ~0.2–0.5 ms and now and then 10–300 ms (another guest's writes): an inline one stops the
   * node's thread that long, and every payment in flight waits for it.
   */
  onFlushed?: (ms: number) => void;
  /**
   * Runs after a flush's `first` outputs and before the rest it releases. The peer transport
   * queues what the `first` ones send and writes it at a microtask (`session.ts`), after the
   * rest has run synchronously: the node hands it the peer manager's `flushReleased`, so that
   * a peer's message reaches its socket before the RPC answers and pushes of the same flush.
   */
  afterFirst?: () => void;
  /**
   * Commits what the flush must cover and is not committed yet (`TurnTransactionDb.commitTurn`).
   * `true`: it ran effects whose promise jobs may commit more; the flush then starts one turn
   * later (once), covering them too.
   */
  beforeFlush?: () => boolean | undefined;
}

/** The default of `syncFlushMaxMs`: a flush faster than this is not worth a thread hand-off. */
export const SYNC_FLUSH_MAX_MS = 1;

/** Runs released output. */
function run(h: Held): void {
  try {
    h.fn();
  } catch {
    // A send to a peer that went away: the state is durable; the peer resyncs on reconnect.
  }
}

/** How many of the latest flush times the placement's median is taken over (odd). */
export const FLUSH_WINDOW = 9;

interface Held {
  /** `total_changes()` when the output was offered: it needs a flush that started after this. */
  changes: number;
  fn: () => void;
  /** Runs before the output without it released by the same flush. */
  first: boolean;
}

/** What counts changes where there is no SQLite `total_changes()` (`PgDb`). */
export interface ChangeCounter {
  changes(): number;
}

export class WalDurability implements Durability {
  private readonly fd?: number;
  private readonly changes: () => number;
  private readonly held: Held[] = [];
  /** Changes count captured when the last completed flush started: all of these are durable. */
  private durableUpTo: number;
  private flushing = false;
  private closed = false;
  private failed?: Error;
  /** The latest flush times, ms, oldest first (empty until one is timed: the first runs inline). */
  private readonly flushTimes: number[] = [];
  /** Their median, ms. */
  private flushMs = 0;
  private readonly syncFlushMaxMs: number;
  private readonly now: () => number;
  syncs = 0;
  /** Flushes made on the event loop's thread (the tests read it). */
  inlineSyncs = 0;

  constructor(
    db: SqliteDb | ChangeCounter,
    private readonly opts: WalDurabilityOptions,
  ) {
    // The WAL exists once journal_mode=WAL is set; it is kept (reset, not deleted) while open.
    if (opts.walFile) this.fd = fs.openSync(opts.walFile, 'r');
    if ('changes' in db) this.changes = () => db.changes();
    else {
      const stmt = db.prepare('SELECT total_changes() AS n').pluck();
      this.changes = () => stmt.get() as number;
    }
    this.durableUpTo = this.changes();
    this.syncFlushMaxMs = opts.syncFlushMaxMs ?? SYNC_FLUSH_MAX_MS;
    this.now = opts.now ?? (() => performance.now());
  }

  /** Where the next flush runs: inline while flushes are fast (see the file's comment). */
  get flushesInline(): boolean {
    return this.flushMs < this.syncFlushMaxMs;
  }

  whenDurable(fn: () => void, first = false): void {
    if (this.failed) return;
    if (this.closed) {
      fn();
      return;
    }
    const changes = this.changes();
    if (this.held.length === 0 && changes <= this.durableUpTo) {
      fn();
      return;
    }
    this.held.push({ changes, fn, first });
    this.flush();
  }

  durable(): Promise<void> {
    return new Promise((resolve) => this.whenDurable(resolve));
  }

  requestFlush(): void {
    if (this.closed) return;
    this.flush();
  }

  /**
   * Starts a flush once the work of this turn of the event loop is done (`setImmediate`), so that
   * the commits it makes after the first output was offered (a payment's RPC answer, then its
   * AddTlc's state) share that flush instead of each waiting for the next one.
   */
  private flush(): void {
    if (this.flushing || this.failed) return;
    this.flushing = true;
    setImmediate(() => this.startFlush());
  }

  private startFlush(deferred = false): void {
    if (this.failed || this.closed) {
      this.flushing = false;
      return;
    }
    let ranEffects: boolean | undefined;
    try {
      ranEffects = this.opts.beforeFlush?.();
    } catch (e) {
      // The commit the flush was to cover failed: nothing held may leave.
      this.flushing = false;
      this.fail(e as Error);
      return;
    }
    if (ranEffects === true && !deferred) {
      // What it committed had effects whose promise jobs may write more (a payment recording a
      // settled TLC): they run before the next immediate, so the flush waits for it — once.
      setImmediate(() => this.startFlush(true));
      return;
    }
    if (this.held.length === 0) {
      // Asked for ahead (`requestFlush`) and no output came: commits alone need no flush now.
      this.flushing = false;
      return;
    }
    const upTo = this.changes();
    const start = this.now();
    if (this.fd === undefined) {
      // Nothing to flush: the commit in `beforeFlush` made every change so far durable.
      this.flushed(null, upTo, start);
      return;
    }
    if (this.flushesInline) {
      let err: Error | null = null;
      try {
        (this.opts.fdatasyncSync ?? fs.fdatasyncSync)(this.fd);
        this.inlineSyncs++;
      } catch (e) {
        err = e as Error;
      }
      this.flushed(err, upTo, start);
      return;
    }
    (this.opts.fdatasync ?? fs.fdatasync)(this.fd, (err) => this.flushed(err, upTo, start));
  }

  /** A flush that started at `start`, when the changes count was `upTo`, is over. */
  private flushed(err: Error | null, upTo: number, start: number): void {
    this.flushing = false;
    if (err) {
      this.fail(err);
      return;
    }
    if (this.fd !== undefined) {
      const ms = this.now() - start;
      const wasInline = this.flushesInline;
      this.flushMs = this.medianWith(ms);
      if (this.flushesInline !== wasInline) this.opts.onPlacement?.(this.flushesInline, this.flushMs);
      this.syncs++;
      this.opts.onFlushed?.(ms);
    }
    this.durableUpTo = upTo;
    this.release();
    if (this.held.length > 0) this.flush();
  }

  /** Adds a flush time to the window and gives the window's median. */
  private medianWith(ms: number): number {
    const times = this.flushTimes;
    times.push(ms);
    if (times.length > FLUSH_WINDOW) times.shift();
    // The lower median while the window fills: two flushes, one slow, stay inline.
    return [...times].sort((a, b) => a - b)[(times.length - 1) >> 1];
  }

  private release(): void {
    let n = 0;
    while (n < this.held.length && this.held[n].changes <= this.durableUpTo) n++;
    const out = this.held.splice(0, n);
    let firsts = 0;
    for (const h of out)
      if (h.first) {
        run(h);
        firsts++;
      }
    if (firsts > 0 && firsts < out.length) {
      try {
        this.opts.afterFirst?.();
      } catch {
        // The transport writes what it holds at its own microtask anyway.
      }
    }
    for (const h of out) if (!h.first) run(h);
  }

  private fail(err: Error): void {
    this.failed = err;
    this.held.length = 0;
    this.opts.onFatal(err);
  }

  /** Flushes synchronously and releases what was held (used before the store closes). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (!this.failed) {
      try {
        this.opts.beforeFlush?.();
        if (this.fd !== undefined) {
          fs.fdatasyncSync(this.fd);
          this.syncs++;
        }
        this.durableUpTo = Number.MAX_SAFE_INTEGER;
        this.release();
      } catch (e) {
        this.fail(e as Error);
      }
    }
    if (this.fd !== undefined) fs.closeSync(this.fd);
  }
}
