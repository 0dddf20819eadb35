/**
 * The node's store on a Postgres server, behind the same synchronous `Db` the domains use with
 * SQLite (`prepare(sql).run/get/all`, `transaction(fn)`, `exec`): each call is sent to the thread
 * that holds the connection (`worker.mjs`) and this thread sleeps until the answer is back
 * (Atomics.wait on a shared flag, then `receiveMessageOnPort`). The SQL is the domains' SQLite
 * text, translated once per statement (`translate.ts`); rows come back with the values
 * better-sqlite3 gives (numbers for integers, Buffers for blobs). A transaction is BEGIN … COMMIT
 * on the one connection (nested ones are savepoints, as in better-sqlite3), and a commit is
 * durable when Postgres says so.
 */

import { MessageChannel, receiveMessageOnPort, Worker } from 'node:worker_threads';
import type Database from 'better-sqlite3';
import { StorageError, StoreError } from '../../codec/index.ts';
import type { Db, RunResult, Statement } from '../db.ts';
import { splitStatements, type Translated, translate } from './translate.ts';

/** How long one call may take before the store is declared dead (a hung server or network). */
const CALL_TIMEOUT_MS = 120_000;

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
   * BEGIN not yet sent: it rides with the transaction's first statement (one hop to the worker
   * less per transaction), and a transaction that ran nothing costs nothing.
   */
  private pendingBegin = false;
  private closed = false;
  private readonly keys = new Map<string, string[]>();
  /** Translated once per SQL text, and prepared once on the server under its name. */
  private readonly statements = new Map<string, Translated & { name: string }>();
  /** Called once when the worker reports the leader lease lost (the node must stop). */
  onLeaseLost?: (reason: string) => void;

  constructor(readonly url: string) {
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    this.worker = new Worker(new URL('./worker.mjs', import.meta.url), {
      workerData: { url, port: port2, flag: this.flag.buffer },
      transferList: [port2],
    });
    this.worker.on('message', (m: { leaseLost?: string }) => {
      if (m.leaseLost !== undefined) this.onLeaseLost?.(m.leaseLost);
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
    return {
      run: (...params: unknown[]): RunResult => {
        const r = this.query(text, params, name);
        return { changes: r.rowCount, lastInsertRowid: 0 };
      },
      get: (...params: unknown[]) => this.query(text, params, name).rows[0],
      all: (...params: unknown[]) => this.query(text, params, name).rows,
    };
  }

  exec(sql: string): this {
    const text = splitStatements(sql)
      .map((s) => translate(s, (table) => this.primaryKeyOf(table)).text)
      .join(';\n');
    if (text) this.call({ op: 'exec', sql: text });
    return this;
  }

  // biome-ignore lint/suspicious/noExplicitAny: the shape of better-sqlite3's `transaction`.
  transaction<F extends (...args: any[]) => any>(fn: F): Database.Transaction<F> {
    const run = (...args: Parameters<F>): ReturnType<F> => {
      const outer = this.depth === 0;
      const savepoint = `sp${this.depth}`;
      if (outer) this.pendingBegin = true;
      else this.call({ op: 'exec', sql: `SAVEPOINT ${savepoint}` });
      this.depth++;
      try {
        const out = fn(...args);
        this.depth--;
        this.end(outer ? 'COMMIT' : `RELEASE SAVEPOINT ${savepoint}`);
        return out;
      } catch (e) {
        this.depth--;
        try {
          this.end(outer ? 'ROLLBACK' : `ROLLBACK TO SAVEPOINT ${savepoint}`);
        } catch {
          // the connection is gone: the server rolls back by itself
        }
        throw e;
      }
    };
    // better-sqlite3's lock modes mean nothing here: one connection, Postgres' own locking.
    return Object.assign(run, { default: run, deferred: run, immediate: run, exclusive: run }) as never;
  }

  /** Ends a transaction or savepoint; an outer transaction that never began needs nothing sent. */
  private end(sql: string): void {
    if (this.depth === 0 && this.pendingBegin) {
      this.pendingBegin = false;
      return;
    }
    this.call({ op: 'exec', sql });
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
    this.closed = true;
    try {
      this.call({ op: 'close' });
    } finally {
      void this.worker.terminate();
    }
    return this;
  }

  private query(
    text: string,
    params: unknown[],
    name?: string,
  ): { rows: Record<string, unknown>[]; rowCount: number } {
    const r = this.call({ op: 'query', sql: text, params, name }) as {
      rows: Record<string, unknown>[];
      rowCount: number;
    };
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
    if (this.closed && req.op !== 'close') throw new StoreError('the store is closed');
    if (this.pendingBegin && (req.op === 'query' || req.op === 'exec')) {
      req.begin = true;
      this.pendingBegin = false;
    }
    Atomics.store(this.flag, 0, 0);
    this.port.postMessage(req);
    const deadline = Date.now() + CALL_TIMEOUT_MS;
    let msg = receiveMessageOnPort(this.port);
    while (!msg) {
      const left = deadline - Date.now();
      if (left <= 0) throw new StoreError('the Postgres store did not answer in time');
      Atomics.wait(this.flag, 0, 0, Math.min(left, 1000));
      msg = receiveMessageOnPort(this.port);
    }
    const m = msg.message as { ok?: unknown; error?: string; code?: string };
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
}
