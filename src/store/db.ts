/**
 * The node's SQLite database: one file, WAL journal, `synchronous=FULL` so that a committed
 * transaction survives a crash or power loss. Each domain (channels, invoices, peers, …) owns its
 * tables and registers its own ordered migrations; the applied version of each domain is kept in
 * `schema_version`. A database written by a newer Strand (a domain version above what this build
 * knows) is refused rather than silently misread.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { StoreError } from '../codec/errors.ts';

export type Db = Database.Database;

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
}

/** Opens (creating if needed) the database at `file` and brings every schema up to date. */
export function openDatabase(file: string, schemas: DomainSchema[], opts: OpenOptions = {}): Db {
  if (file !== ':memory:') fs.mkdirSync(path.dirname(file), { recursive: true });
  const db = new Database(file, { readonly: opts.readonly ?? false });
  try {
    if (!opts.readonly) {
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = FULL');
      db.pragma('foreign_keys = ON');
    }
    db.pragma('busy_timeout = 5000');
    migrate(db, schemas, opts.readonly ?? false);
    return db;
  } catch (e) {
    db.close();
    throw e;
  }
}

function migrate(db: Db, schemas: DomainSchema[], readonly: boolean): void {
  if (!readonly) {
    db.exec('CREATE TABLE IF NOT EXISTS schema_version (domain TEXT PRIMARY KEY, version INTEGER NOT NULL)');
  }
  const hasTable = db
    .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'")
    .get();
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
