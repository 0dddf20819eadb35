/**
 * The node's store on a Postgres server, behind the same synchronous `Db` the domains use with
 * SQLite (`prepare(sql).run/get/all`, `transaction(fn)`, `exec`): each call is sent to the thread
 * that holds the connection (`worker.mjs`) and this thread sleeps until the answer is back
 * (Atomics.wait on a shared flag, then `receiveMessageOnPort`). The SQL is the domains' SQLite
 * text, translated once per statement (`translate.ts`); rows come back with the values
 * better-sqlite3 gives (numbers for integers, Buffers for blobs). A transaction is BEGIN … COMMIT
 * on the one connection (nested ones are savepoints, as in better-sqlite3), and a commit is
 * durable when Postgres says so.
 *
 * Turns (`enableTurns`, as the node runs it): as `TurnTransactionDb` does for SQLite, the first
 * statement of a turn of the event loop opens a transaction, and the end of the turn, or the
 * durability gate before output leaves (`commitTurn`), commits it. Without turns every write
 * outside a domain transaction was a commit of its own, and Postgres waits for its WAL flush at
 * each: a payment's dozen writes at the payer were a dozen flushes on the server, one after the
 * other. A domain transaction inside a turn is a savepoint of it. A statement that fails outside
 * a domain transaction aborts the whole transaction in Postgres (SQLite undoes that statement
 * alone): the turn is rolled back and its earlier writes, which their callers took as done, run
 * again from the turn's log in a new one, so only the failed statement's caller sees the error.
 *
 * A call that gets no answer within the store's timeout (`?query_timeout=<ms>` in the URL,
 * default 120 s: a statement stuck behind a lock, a server or network that stopped answering, a
 * worker that hangs) abandons the store: the call throws `StorageError` `POSTGRES_TIMEOUT`, every
 * later call throws it too, the hung session is ended on the server, and a lease holder is told
 * it lost its lease (the node exits, as it does when the connection breaks): what the hung
 * statement did is unknown, and a process that cannot know its own state must not go on.
 */

import { MessageChannel, receiveMessageOnPort, Worker } from 'node:worker_threads';
import type Database from 'better-sqlite3';
import { StorageError, StoreError } from '../../codec/index.ts';
import type { Db, DomainSchema, RunResult, Statement } from '../db.ts';
import { splitStatements, type Translated, translate } from './translate.ts';

/** How long one call may take before the store is abandoned, unless the URL says (`?query_timeout=`). */
export const DEFAULT_CALL_TIMEOUT_MS = 120_000;
/** After a timeout, how long the worker gets to end the hung session before the store gives up on it. */
const ABORT_GRACE_MS = 5_000;

/**
 * The store's timeout, and the URL without it: `store.timeout_ms` (`configMs`), or
 * `?query_timeout=<ms>` in the URL (node-postgres' name for a client-side query timeout), never
 * both; else the default. The worker enforces nothing itself, this thread's wait does.
 */
export function callTimeoutOf(url: string, configMs?: number): { url: string; timeoutMs: number } {
  if (!/[?&]query_timeout=/.test(url)) return { url, timeoutMs: configMs ?? DEFAULT_CALL_TIMEOUT_MS };
  if (configMs !== undefined)
    throw new StoreError('store.timeout_ms and the query_timeout of store.url both set: keep one');
  const u = new URL(url);
  const text = u.searchParams.get('query_timeout') ?? '';
  const ms = Number(text);
  if (!/^\d+$/.test(text) || !(ms > 0))
    throw new StoreError(`store.url: query_timeout must be a number of milliseconds above 0, got ${text}`);
  u.searchParams.delete('query_timeout');
  return { url: u.toString(), timeoutMs: ms };
}

/** Why a node on Postgres must stop: its lease was lost, or a store call went unanswered. */
export type LeaseLossCause = 'lease_lost' | 'store_timeout';

export interface LeaseResult {
  held: boolean;
  /** Who holds it, when we do not. */
  holder?: string;
}

export class PgDb implements Db {
  private readonly worker: Worker;
  private readonly port;
  private readonly flag = new Int32Array(new SharedArrayBuffer(4));
  private depth = 0;
  /**
   * Transaction control not yet sent (BEGIN, SAVEPOINT, RELEASE, ROLLBACK TO): it rides, in order,
   * with the next statement, so the nested transactions the domains open inside each other cost
   * no hop to the worker of their own; a (sub)transaction that ran nothing sends nothing, and the
   * RELEASEs still pending at COMMIT are dropped (COMMIT releases every savepoint).
   */
  private pending: string[] = [];
  private closed = false;
  /** Turns on (`enableTurns`): told when a turn cannot be committed or restored (the node stops). */
  private turnFatal?: (err: Error) => void;
  /** A turn's transaction is open (its BEGIN sent or pending); committed by `commitTurn`. */
  private turnOpen = false;
  /** The open turn's statements that ran, to run again if the turn's transaction is lost. */
  private turnLog: { text: string; params: unknown[]; name?: string }[] = [];
  private restoring = false;
  /** Writes run so far (the durability gate's count of changes: `changes()`). */
  private writesRun = 0;
  /** Turn transactions committed (read by the tests). */
  turnCommits = 0;
  private readonly keys = new Map<string, string[]>();
  /** Translated once per SQL text, and prepared once on the server under its name. */
  private readonly statements = new Map<string, Translated & { name: string }>();
  /** Id of the last request sent: an answer with another id is a late one, dropped. */
  private nextId = 0;
  /** Set once a call timed out: every call throws it from then on. */
  private abandoned?: StorageError;
  private leaseLostTold = false;
  /** How long a call waits for its answer before the store is abandoned. */
  readonly timeoutMs: number;
  /**
   * Called once when the lease is lost, or the store abandoned after a call timed out
   * (`cause`), while held: the node must stop.
   */
  onLeaseLost?: (reason: string, cause: LeaseLossCause) => void;
  /** The domain schemas `openStore` brought this database to (what a backup's SQLite copy needs). */
  schemas?: DomainSchema[];

  /**
   * `timeoutMs` (`store.timeout_ms`), or `url` ending with `?query_timeout=<ms>`: how long one call
   * may take (default 120 s).
   */
  constructor(url: string, timeoutMs?: number) {
    const { url: connectTo, timeoutMs: callTimeout } = callTimeoutOf(url, timeoutMs);
    this.timeoutMs = callTimeout;
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    this.worker = new Worker(new URL('./worker.mjs', import.meta.url), {
      workerData: { url: connectTo, port: port2, flag: this.flag.buffer },
      transferList: [port2],
    });
    this.worker.on('message', (m: { leaseLost?: string }) => {
      if (m.leaseLost !== undefined) this.leaseLost(m.leaseLost);
    });
    this.worker.on('error', () => {});
    this.worker.unref();
    try {
      this.call({ op: 'connect' });
    } catch (e) {
      void this.worker.terminate();
      throw e;
    }
  }

  get open(): boolean {
    return !this.closed;
  }

  get inTransaction(): boolean {
    return this.depth > 0;
  }

  prepare(sql: string): Statement {
    let t = this.statements.get(sql);
    if (!t) {
      t = { ...translate(sql, (table) => this.primaryKeyOf(table)), name: `s${this.statements.size}` };
      this.statements.set(sql, t);
    }
    const { text, name } = t;
    // A read need not run again when a turn is restored; a write with RETURNING must.
    const writes = !/^\s*(SELECT|WITH)\b/i.test(text);
    return {
      run: (...params: unknown[]): RunResult => {
        const r = this.query(text, params, name, true);
        return { changes: r.rowCount, lastInsertRowid: 0 };
      },
      get: (...params: unknown[]) => this.query(text, params, name, writes).rows[0],
      all: (...params: unknown[]) => this.query(text, params, name, writes).rows,
    };
  }

  exec(sql: string): this {
    // DDL and maintenance run as they did without turns: committed by themselves.
    if (this.depth === 0) this.commitTurn();
    const text = splitStatements(sql)
      .map((s) => translate(s, (table) => this.primaryKeyOf(table)).text)
      .join(';\n');
    if (text) this.call({ op: 'exec', sql: text });
    return this;
  }

  // biome-ignore lint/suspicious/noExplicitAny: the shape of better-sqlite3's `transaction`.
  transaction<F extends (...args: any[]) => any>(fn: F): Database.Transaction<F> {
    const run = (...args: Parameters<F>): ReturnType<F> => this.within('BEGIN', () => fn(...args), true);
    // better-sqlite3's lock modes mean nothing here: one connection, Postgres' own locking.
    return Object.assign(run, { default: run, deferred: run, immediate: run, exclusive: run }) as never;
  }

  /**
   * Runs `fn`'s reads on one snapshot of the database (a read-only REPEATABLE READ transaction):
   * every statement sees the same committed state, whatever else commits meanwhile. Not inside
   * a transaction.
   */
  snapshot<T>(fn: () => T): T {
    if (this.depth > 0) throw new StoreError('a snapshot cannot be taken inside a transaction');
    this.commitTurn();
    return this.within('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY', fn, false);
  }

  /**
   * `fn` in a transaction opened by `begin` (outermost) or in a savepoint (nested). `inTurn`: a
   * domain transaction, which opens the turn (and is a savepoint of it); a snapshot does not.
   */
  private within<T>(begin: string, fn: () => T, inTurn: boolean): T {
    if (inTurn) this.openTurn();
    const outer = this.depth === 0 && !this.turnOpen;
    const open = outer ? begin : `SAVEPOINT sp${this.depth}`;
    const mark = this.turnLog.length;
    this.pending.push(open);
    this.depth++;
    try {
      const out = fn();
      this.depth--;
      if (this.pending.at(-1) === open) this.pending.pop();
      else if (outer) this.commit();
      else this.pending.push(`RELEASE SAVEPOINT sp${this.depth}`);
      return out;
    } catch (e) {
      this.depth--;
      this.turnLog.length = Math.min(this.turnLog.length, mark);
      if (this.pending.at(-1) === open) this.pending.pop();
      else if (outer) this.rollback();
      else this.pending.push(`ROLLBACK TO SAVEPOINT sp${this.depth}`, `RELEASE SAVEPOINT sp${this.depth}`);
      throw e;
    }
  }

  /**
   * Batches the statements of each turn of the event loop into one transaction from now on
   * (see the file's comment). `onFatal`: a turn could not be committed, or restored after a
   * failed statement; its writes are gone and the node must stop before it speaks on them.
   */
  enableTurns(onFatal: (err: Error) => void): this {
    this.turnFatal = onFatal;
    return this;
  }

  /** Writes run so far: the durability gate holds output offered after one until a commit. */
  changes(): number {
    return this.writesRun;
  }

  /** Opens the turn's transaction if turns are on and none is open: its BEGIN rides with the next statement. */
  private openTurn(): void {
    if (!this.turnFatal || this.turnOpen || this.depth > 0 || this.closed || this.restoring) return;
    this.pending.push('BEGIN');
    this.turnOpen = true;
    this.commitLater();
  }

  /** Commits the turn at the end of this turn of the event loop. */
  private commitLater(): void {
    setImmediate(() => {
      try {
        this.commitTurn();
      } catch {
        // told to `onFatal`; the store refuses every call from now on
      }
    });
  }

  /** Commits the turn's transaction now, if one is open (the durability gate, a snapshot, close). */
  commitTurn(): void {
    if (this.abandoned) throw this.abandoned;
    if (!this.turnOpen) return;
    if (this.depth > 0) {
      // From inside a domain transaction: committing now would end it half way.
      this.commitLater();
      return;
    }
    this.turnOpen = false;
    this.turnLog = [];
    if (this.pending[0] === 'BEGIN') {
      // Nothing ran in it: the BEGIN was never sent.
      this.pending = [];
      return;
    }
    try {
      this.commit();
      this.turnCommits++;
    } catch (e) {
      this.pending = [];
      this.turnFailed(e as Error);
      throw e;
    }
  }

  /**
   * A statement of the open turn failed outside any domain transaction: Postgres has aborted the
   * turn's transaction. It is rolled back, and the turn's statements that ran before are run
   * again in a new one; the caller of the failed statement gets its error.
   */
  private restoreTurn(): void {
    const log = this.turnLog;
    this.restoring = true;
    this.pending = [];
    try {
      this.call({ op: 'exec', sql: 'ROLLBACK' });
      if (log.length === 0) {
        this.turnOpen = false;
        return;
      }
      this.pending.push('BEGIN');
      for (const q of log) this.call({ op: 'query', sql: q.text, params: q.params, name: q.name });
    } catch (e) {
      this.turnOpen = false;
      this.turnLog = [];
      this.pending = [];
      this.turnFailed(
        new StoreError(`a store turn was lost and could not be run again: ${(e as Error).message}`),
      );
    } finally {
      this.restoring = false;
    }
  }

  /**
   * A turn's writes are gone: the store refuses every call from now on (as after a timeout), so
   * nothing can take them as done — not even a gate that asks for a commit after this one.
   */
  private turnFailed(err: Error): void {
    const fatal = this.turnFatal;
    this.turnFatal = undefined;
    this.abandoned ??= new StorageError('POSTGRES_TURN_LOST', `a store turn was lost: ${err.message}`);
    fatal?.(err);
  }

  private commit(): void {
    const sql = [...this.pending.filter((q) => !q.startsWith('RELEASE')), 'COMMIT'].join('; ');
    this.pending = [];
    this.call({ op: 'exec', sql });
  }

  private rollback(): void {
    // Whatever is pending happened after the BEGIN that was sent: the rollback undoes it all.
    this.pending = [];
    try {
      this.call({ op: 'exec', sql: 'ROLLBACK' });
    } catch {
      // the connection is gone: the server rolls back by itself
    }
  }

  /**
   * Takes the leader lease of `key` for `holder` if free, expired or already ours; the worker then
   * renews it every `ttlMs / 3` and fails every call once it could not before it ran out.
   */
  takeLease(key: string, holder: string, ttlMs: number): LeaseResult {
    return this.call({ op: 'lease', key, holder, ttlMs }) as LeaseResult;
  }

  close(): this {
    if (this.closed) return this;
    try {
      if (!this.abandoned) this.commitTurn();
    } catch {
      // told to `onFatal`; the store closes all the same
    }
    this.closed = true;
    try {
      // An abandoned store hands nothing over: its lease runs out, its worker may be stuck.
      if (!this.abandoned) this.call({ op: 'close' });
    } finally {
      void this.worker.terminate();
    }
    return this;
  }

  private leaseLost(reason: string, cause: LeaseLossCause = 'lease_lost'): void {
    if (this.leaseLostTold) return;
    this.leaseLostTold = true;
    this.onLeaseLost?.(reason, cause);
  }

  private query(
    text: string,
    params: unknown[],
    name: string | undefined,
    writes: boolean,
  ): { rows: Record<string, unknown>[]; rowCount: number } {
    // A read alone opens no turn (nothing to commit), but runs in the open one.
    if (writes) this.openTurn();
    let r: { rows: Record<string, unknown>[]; rowCount: number };
    try {
      r = this.call({ op: 'query', sql: text, params, name }) as typeof r;
    } catch (e) {
      if (this.turnOpen && this.depth === 0 && !this.abandoned) this.restoreTurn();
      throw e;
    }
    if (writes) {
      this.writesRun++;
      if (this.turnOpen) this.turnLog.push({ text, params, name });
    }
    for (const row of r.rows) {
      // SQLite's rowid is not one of a table's columns (`SELECT *` leaves it out).
      delete row.rowid;
      for (const k in row) {
        const v = row[k];
        if (v instanceof Uint8Array && !Buffer.isBuffer(v))
          row[k] = Buffer.from(v.buffer, v.byteOffset, v.length);
      }
    }
    return r;
  }

  private primaryKeyOf(table: string): string[] {
    let key = this.keys.get(table);
    if (!key) {
      const r = this.call({
        op: 'query',
        sql: `SELECT a.attname AS name FROM pg_index i
              JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
              WHERE i.indrelid = $1::regclass AND i.indisprimary ORDER BY array_position(i.indkey, a.attnum)`,
        params: [table],
      }) as { rows: { name: string }[] };
      key = r.rows.map((x) => x.name);
      if (key.length === 0) throw new StoreError(`table ${table} has no primary key (INSERT OR REPLACE)`);
      this.keys.set(table, key);
    }
    return key;
  }

  private call(req: Record<string, unknown>): unknown {
    if (this.abandoned) throw this.abandoned;
    if (this.closed && req.op !== 'close') throw new StoreError('the store is closed');
    if (this.pending.length > 0 && (req.op === 'query' || req.op === 'exec')) {
      req.before = this.pending.join('; ');
      this.pending = [];
    }
    const id = ++this.nextId;
    const m = this.send({ ...req, id }, this.timeoutMs);
    if (!m) {
      const reason = `the Postgres store did not answer within ${this.timeoutMs} ms (${String(req.op)})`;
      this.abandoned = new StorageError('POSTGRES_TIMEOUT', reason);
      // The worker ends the hung session and stops renewing the lease, if it still can.
      this.send({ op: 'abort', id: ++this.nextId, reason }, ABORT_GRACE_MS);
      this.leaseLost(reason, 'store_timeout');
      throw this.abandoned;
    }
    if (m.error !== undefined) {
      // No SQLSTATE (connection gone, lease lost), a connection class (08) or resources (53: disk
      // full): the storage failed, as SQLITE_FULL/IOERR say for a file.
      if (!m.code || /^(08|53|57|58)/.test(m.code))
        throw new StorageError(m.code ? `POSTGRES_${m.code}` : 'POSTGRES_UNAVAILABLE', m.error);
      const e = new StoreError(`postgres: ${m.error}`);
      (e as { code?: string }).code = m.code;
      throw e;
    }
    return m.ok;
  }

  /** Posts `req` and sleeps until its answer (same id) is back; undefined after `timeoutMs`. */
  private send(
    req: Record<string, unknown> & { id: number },
    timeoutMs: number,
  ): { ok?: unknown; error?: string; code?: string } | undefined {
    const deadline = Date.now() + timeoutMs;
    Atomics.store(this.flag, 0, 0);
    this.port.postMessage(req);
    for (;;) {
      const msg = receiveMessageOnPort(this.port);
      if (msg) {
        const m = msg.message as { id?: number; ok?: unknown; error?: string; code?: string };
        if (m.id === req.id) return m;
        // A late answer to a request given up on: the flag it raised is not ours.
        Atomics.store(this.flag, 0, 0);
        continue;
      }
      const left = deadline - Date.now();
      if (left <= 0) return undefined;
      Atomics.wait(this.flag, 0, 0, Math.min(left, 1000));
    }
  }
}
