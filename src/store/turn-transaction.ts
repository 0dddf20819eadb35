/**
 * One SQLite transaction per turn of the event loop.
 *
 * Without it every write that is not inside a domain's own transaction commits by itself: a
 * payment made a dozen commits per node (its session three times, its TLC link rows, the channel
 * states), and each commit writes every page it touched into the WAL again — 4 KB per page, the
 * same pages over and over. Here the first write of a turn opens a transaction, and the end of
 * the turn (`setImmediate`), or the durability flush if it comes first, commits it: a page touched
 * by ten writes of one turn reaches the WAL once.
 *
 * Why this keeps persist-before-speak: nothing that depends on a state leaves the node before a
 * WAL flush covers it (`durability.ts`), and every flush commits the open turn before it starts.
 * A turn's writes that are lost uncommitted (a crash, `process.exit`) are therefore writes no
 * byte outside has depended on yet — the same as a crash a moment before they were made.
 *
 * What the domains see does not change:
 * - `transaction(fn)` still runs `fn` all or nothing (a savepoint inside the turn);
 * - `inTransaction` still means "inside a domain's transaction that may yet roll back" (the
 *   channel store caches only outside one), not the turn's own transaction;
 * - a statement that fails is undone alone, as SQLite undoes a failed statement and keeps the
 *   transaction. SQLite may instead roll the whole transaction back (on SQLITE_FULL, SQLITE_IOERR,
 *   SQLITE_NOMEM): then the turn's earlier writes, which their callers took as done, are run again
 *   from the turn's log (each write with its parameters, in order; a domain transaction that
 *   failed is not in it) in a new transaction, and only the failed statement's caller sees the
 *   error — as when every write committed by itself. A full disk is then refused request by
 *   request and the node goes on once space returns. If the writes cannot be run again, or the
 *   turn's COMMIT fails, they are gone: `onFatal` is told, and the node must stop before it
 *   speaks on them (as on a failed flush).
 *
 * Two things cannot run inside a transaction, and get the turn committed first: an online backup
 * (a backup step taken while the same connection has a write transaction open copies an empty
 * database; `unbatched` holds turns off for the whole copy) and VACUUM (`commitTurn`).
 */
import type Database from 'better-sqlite3';
import { type Db, isSqlite, type SqliteDb, type Statement } from './db.ts';

/** A successful write of the open turn: run again as it was if SQLite rolls the turn back. */
interface LoggedWrite {
  w: { run(...params: unknown[]): unknown };
  params: unknown[];
}

/** Prepared statements kept at most (the cache starts over when full). */
const MAX_STATEMENTS = 512;

export class TurnTransactionDb implements Db {
  /** A turn's transaction is open (BEGIN ran, COMMIT is scheduled). */
  private turnOpen = false;
  /** Depth of the domains' own `transaction(fn)` calls. */
  private explicit = 0;
  /** While > 0 (an online backup), every write commits by itself, as without turns. */
  private suspended = 0;
  /** The open turn's writes, to run again if SQLite rolls the turn back. */
  private log: LoggedWrite[] = [];
  private readonly statements = new Map<string, Statement>();
  /** Writes (statements and domain transactions) running now. */
  private depth = 0;
  /** SQLite rolled the turn back while writes were running; replayed when they have all ended. */
  private lost = false;
  private failed = false;
  /** Turn transactions committed (read by the tests). */
  commits = 0;

  constructor(
    readonly sqlite: SqliteDb,
    private readonly onFatal: (err: Error) => void,
  ) {
    this.runInTransaction = sqlite.transaction((fn: (...a: unknown[]) => unknown, args: unknown[]) =>
      fn(...args),
    );
  }

  get inTransaction(): boolean {
    return this.explicit > 0;
  }

  get open(): boolean {
    return this.sqlite.open;
  }

  /**
   * The statement for `sql`, prepared once: domains may prepare on every call (SQLite compiles
   * each time, 10–30 µs), so statements are kept by their text (bounded: a few filters build SQL).
   */
  prepare(sql: string): Statement {
    const hit = this.statements.get(sql);
    if (hit) return hit;
    const st = this.sqlite.prepare(sql);
    const wrapped: Statement = {
      run: (...params: unknown[]) => this.write(st, params),
      get: (...params: unknown[]) => st.get(...params),
      all: (...params: unknown[]) => st.all(...params),
    };
    if (this.statements.size >= MAX_STATEMENTS) this.statements.clear();
    this.statements.set(sql, wrapped);
    return wrapped;
  }

  exec(sql: string): unknown {
    return this.write({ run: () => this.sqlite.exec(sql) }, []);
  }

  /**
   * better-sqlite3's transaction wrapper, made once: it runs the function it is given inside
   * BEGIN…COMMIT, or a savepoint when a transaction is open. Making one per call
   * (`sqlite.transaction(fn)` for every domain transaction) cost more than the savepoint itself:
   * ~0.7 % of a payer's CPU at 64 payments in flight, for its payment saves alone.
   */
  private readonly runInTransaction: (fn: (...a: unknown[]) => unknown, args: unknown[]) => unknown;

  // biome-ignore lint/suspicious/noExplicitAny: better-sqlite3's signature.
  transaction<F extends (...args: any[]) => any>(fn: F): Database.Transaction<F> {
    const wrapped = (...args: unknown[]): ReturnType<F> => {
      this.explicit++;
      try {
        return this.write({ run: () => this.runInTransaction(fn, args) as ReturnType<F> }, [], false);
      } finally {
        this.explicit--;
      }
    };
    return wrapped as unknown as Database.Transaction<F>;
  }

  /** Commits the turn's transaction now, if one is open (before a flush, VACUUM, close). */
  commitTurn(): void {
    if (!this.turnOpen) return;
    if (this.explicit > 0) {
      // Called from inside a domain's transaction: committing now would end it half way.
      setImmediate(() => this.commitTurn());
      return;
    }
    this.turnOpen = false;
    this.log = [];
    if (!this.sqlite.inTransaction) {
      this.fatal(new Error('the turn transaction was rolled back by SQLite'));
      return;
    }
    try {
      this.sqlite.exec('COMMIT');
      this.commits++;
    } catch (e) {
      // A COMMIT that fails may leave the transaction open: undo it so the connection stays usable
      // for the shutdown, and stop — the turn's writes are not in the store.
      if (this.sqlite.inTransaction) this.sqlite.exec('ROLLBACK');
      this.fatal(e as Error);
    }
  }

  /** Runs `fn` (an online backup) with every write committing by itself until it settles. */
  async unbatched<T>(fn: () => Promise<T>): Promise<T> {
    this.suspended++;
    this.commitTurn();
    try {
      return await fn();
    } finally {
      this.suspended--;
    }
  }

  close(): unknown {
    if (this.sqlite.open) this.commitTurn();
    return this.sqlite.close();
  }

  /**
   * Runs one write: a statement (`logged`: kept in the turn's log once it succeeds) or a domain
   * transaction (its statements are logged one by one; if it fails they leave the log with it).
   */
  private write<T>(w: { run(...params: unknown[]): T }, params: unknown[], logged = true): T {
    if (this.lost) throw new Error('the store transaction of this turn is being restored');
    if (!this.turnOpen && this.suspended === 0 && !this.failed && !this.sqlite.inTransaction) {
      this.sqlite.exec('BEGIN');
      this.turnOpen = true;
      setImmediate(() => this.commitTurn());
    }
    const mark = this.log.length;
    this.depth++;
    try {
      const result = w.run(...params);
      if (logged && this.turnOpen) this.log.push({ w, params });
      return result;
    } catch (e) {
      this.log.length = mark;
      if (this.turnOpen && !this.sqlite.inTransaction) this.lost = true;
      throw e;
    } finally {
      this.depth--;
      if (this.lost && this.depth === 0) this.restoreTurn();
    }
  }

  /** SQLite rolled the turn back: its writes that succeeded run again in a new transaction. */
  private restoreTurn(): void {
    this.lost = false;
    try {
      this.sqlite.exec('BEGIN');
      for (const { w, params } of this.log) w.run(...params);
    } catch (e) {
      if (this.sqlite.inTransaction) this.sqlite.exec('ROLLBACK');
      this.turnOpen = false;
      this.log = [];
      this.fatal(
        new Error(
          `the turn transaction was rolled back by SQLite and could not be restored: ${(e as Error).message}`,
        ),
      );
    }
  }

  private fatal(err: Error): void {
    if (this.failed) return;
    this.failed = true;
    this.onFatal(err);
  }
}

/** The SQLite database behind `db`, if it is one (directly or batched by turns). */
export function sqliteOf(db: Db): SqliteDb | undefined {
  if (db instanceof TurnTransactionDb) return db.sqlite;
  return isSqlite(db) ? db : undefined;
}
