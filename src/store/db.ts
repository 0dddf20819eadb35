/**
 * The node's SQLite database: one file, WAL journal. By default `synchronous=FULL`, so that a
 * committed transaction survives a crash or power loss when it returns; the node itself opens with
 * `synchronous=NORMAL` and holds its output until a group flush (`durability.ts`). Each domain (channels, invoices, peers, …) owns its
 * tables and registers its own ordered migrations; the applied version of each domain is kept in
 * `schema_version`. A database written by a newer Strand (a domain version above what this build
 * knows) is refused rather than silently misread.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { StoreError } from '../codec/index.ts';

/** What `run` says: rows changed (SQLite's `lastInsertRowid` is not used by the domains). */
export interface RunResult {
  changes: number;
  lastInsertRowid: number | bigint;
}

export interface Statement {
  run(...params: unknown[]): RunResult;
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
}

/**
 * The store as the domains use it: better-sqlite3's synchronous API, the part they need. Met by a
 * better-sqlite3 database (the default) and by `postgres/pg-db.ts` (`store.url: postgres://…`).
 */
export interface Db {
  prepare(sql: string): Statement;
  exec(sql: string): unknown;
  // biome-ignore lint/suspicious/noExplicitAny: better-sqlite3's signature.
  transaction<F extends (...args: any[]) => any>(fn: F): Database.Transaction<F>;
  readonly inTransaction: boolean;
  readonly open: boolean;
  close(): unknown;
}

/** The SQLite store: what backups, the page quota and the migration source need beyond `Db`. */
export type SqliteDb = Database.Database;

/** Whether `db` is the SQLite file (else a server store, which has no file to copy or cap). */
export function isSqlite(db: Db): db is SqliteDb {
  return db instanceof Database;
}

export interface Migration {
  /** 1, 2, 3 … in order, per domain. */
  version: number;
  /** SQL text or a function for migrations that need code. Runs inside one transaction. */
  up: string | ((db: Db) => void);
}

export interface DomainSchema {
  domain: string;
  migrations: Migration[];
}

export interface OpenOptions {
  /** Open read-only (e.g. `--check-validate`); migrations are not applied. */
  readonly?: boolean;
  /**
   * `FULL` (default): each commit is flushed before it returns. `NORMAL`: commits reach the WAL
   * unflushed; the caller must flush before relying on them (`WalDurability`).
   */
  synchronous?: 'FULL' | 'NORMAL';
}

/** Opens (creating if needed) the database at `file` and brings every schema up to date. */
export function openDatabase(file: string, schemas: DomainSchema[], opts: OpenOptions = {}): SqliteDb {
  if (file !== ':memory:') fs.mkdirSync(path.dirname(file), { recursive: true });
  const db = new Database(file, { readonly: opts.readonly ?? false });
  try {
    if (!opts.readonly) {
      db.pragma('journal_mode = WAL');
      db.pragma(`synchronous = ${opts.synchronous ?? 'FULL'}`);
      db.pragma('foreign_keys = ON');
      // Statement journals in memory. The node writes inside one transaction a turn
      // (`turn-transaction.ts`), so every domain transaction is a savepoint and every page it
      // changes is first copied into the savepoint's journal. Past 64 KiB SQLite spills that
      // journal into a temporary file (`/var/tmp/etilqs_*`): at 64 payments in flight the payer
      // opened ~5 such files a second and wrote more pages into them than into its WAL, each
      // page one or two system calls on the node's thread. In memory it is a copy; nothing of it
      // was ever to be durable (a crash discards it with the transaction). The same setting puts
      // the temporary database of a VACUUM in memory: only the dev page quota runs one
      // (`watchPageQuota`), on a devnet's small store.
      db.pragma('temp_store = MEMORY');
    }
    db.pragma('busy_timeout = 5000');
    const hasVersions = () =>
      !!db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'").get();
    migrate(db, schemas, opts.readonly ?? false, hasVersions);
    return db;
  } catch (e) {
    db.close();
    throw e;
  }
}

/**
 * Brings every domain's tables up to its latest migration (same for both dialects: the Postgres
 * store translates the SQL). `hasVersions` says whether `schema_version` exists (read-only opens).
 */
export function migrate(
  db: Db,
  schemas: DomainSchema[],
  readonly: boolean,
  hasVersions: () => boolean = () => true,
): void {
  if (!readonly) {
    db.exec('CREATE TABLE IF NOT EXISTS schema_version (domain TEXT PRIMARY KEY, version INTEGER NOT NULL)');
  }
  const hasTable = readonly ? hasVersions() : true;
  const current = new Map<string, number>();
  if (hasTable) {
    for (const row of db.prepare('SELECT domain, version FROM schema_version').all() as {
      domain: string;
      version: number;
    }[]) {
      current.set(row.domain, row.version);
    }
  }
  for (const schema of schemas) {
    const known = latestVersion(schema);
    const have = current.get(schema.domain) ?? 0;
    if (have > known) {
      throw new StoreError(
        `database schema of '${schema.domain}' is version ${have}, newer than this build supports (${known}); ` +
          'upgrade Strand or restore a backup made by this version',
      );
    }
    if (have === known) continue;
    if (readonly)
      throw new StoreError(`database schema of '${schema.domain}' needs migration (${have} → ${known})`);
    const pending = schema.migrations.filter((m) => m.version > have).sort((a, b) => a.version - b.version);
    const run = db.transaction(() => {
      for (const m of pending) {
        if (typeof m.up === 'string') db.exec(m.up);
        else m.up(db);
      }
      db.prepare(
        'INSERT INTO schema_version (domain, version) VALUES (?, ?) ON CONFLICT(domain) DO UPDATE SET version = excluded.version',
      ).run(schema.domain, known);
    });
    run();
  }
}

function latestVersion(schema: DomainSchema): number {
  let v = 0;
  for (const [i, m] of schema.migrations.entries()) {
    if (m.version !== i + 1)
      throw new Error(`migrations of '${schema.domain}' must be numbered 1..n in order`);
    v = m.version;
  }
  return v;
}

/** SQLite's largest `max_page_count`: no cap. */
const NO_PAGE_CAP = 4294967294;

/**
 * Dev and test hook (`STRAND_DEV_STORE_QUOTA_FILE`): caps this connection's database at the page
 * count written in `file` (SQLite's `max_page_count`, after a VACUUM), read again whenever the file changes; 0, a
 * blank or a missing file lifts the cap. A cap at or below the current size (SQLite raises it to
 * that size) makes every write that needs a new page fail with SQLITE_FULL, as a full disk does —
 * a real storage failure without root, a mount or a full disk. Returns the function that stops it.
 */
export function watchPageQuota(
  db: SqliteDb,
  file: string,
  onApplied?: (pages: { max: number; count: number }) => void,
  /** Ends an open transaction first (VACUUM cannot run in one): `TurnTransactionDb.commitTurn`. */
  beforeApply?: () => void,
): () => void {
  const apply = () => {
    let cap = 0;
    try {
      cap = Number.parseInt(fs.readFileSync(file, 'utf8').trim(), 10) || 0;
    } catch {
      // no file: no cap
    }
    if (!db.open) return;
    beforeApply?.();
    // Packed first, as a disk that filled up leaves no room in the pages either.
    if (cap > 0) db.exec('VACUUM');
    const max = db.pragma(`max_page_count = ${cap > 0 ? cap : NO_PAGE_CAP}`, { simple: true }) as number;
    onApplied?.({ max, count: db.pragma('page_count', { simple: true }) as number });
  };
  apply();
  fs.watchFile(file, { interval: 100, persistent: false }, apply);
  return () => fs.unwatchFile(file, apply);
}
