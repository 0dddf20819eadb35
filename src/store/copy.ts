/**
 * Copies between the two stores, every table of every domain, row by row in the source's
 * insertion order (`rowid` on both), in one transaction on the target (all or nothing); both
 * sides get this build's migrations first, so they have the same tables and versions.
 *
 * - `copySqliteToPostgres` (`strand store migrate`): a node's SQLite file into an empty Postgres
 *   database; a target that already holds rows is refused rather than merged.
 * - `copyPostgresToSqlite` (`backup_now` on a Postgres store): a live Postgres store into a new
 *   SQLite file, read from one snapshot of the database.
 */
import fs from 'node:fs';
import { StoreError } from '../codec/index.ts';
import { type DomainSchema, migrate, openDatabase, type SqliteDb } from './db.ts';
import { PgDb } from './postgres/pg-db.ts';

export interface CopiedTable {
  table: string;
  rows: number;
}

/** The domain tables of a SQLite store (its schema_version aside), by name. */
function domainTables(db: SqliteDb): string[] {
  return (
    db
      .prepare(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> 'schema_version' ORDER BY name",
      )
      .all() as { name: string }[]
  ).map((r) => r.name);
}

/**
 * Writes `src` (a Postgres store, migrated to `schemas`) into a new SQLite file at `file`: every
 * table read on one snapshot (`PgDb.snapshot`), so the copy is one committed state of the store
 * even while the node keeps writing.
 */
export function copyPostgresToSqlite(src: PgDb, file: string, schemas: DomainSchema[]): CopiedTable[] {
  if (fs.existsSync(file)) throw new StoreError(`${file} exists: the copy goes to a new file`);
  const dst = openDatabase(file, schemas);
  try {
    const tables = domainTables(dst);
    return dst.transaction(() =>
      src.snapshot(() =>
        tables.map((table) => {
          const rows = src.prepare(`SELECT * FROM ${table} ORDER BY rowid`).all() as Record<
            string,
            unknown
          >[];
          for (const row of rows) {
            const cols = Object.keys(row);
            dst
              .prepare(`INSERT INTO ${table} (${cols.join(', ')}) VALUES (${cols.map(() => '?').join(', ')})`)
              .run(...cols.map((c) => row[c]));
          }
          return { table, rows: rows.length };
        }),
      ),
    )();
  } finally {
    dst.close();
  }
}

export function copySqliteToPostgres(file: string, url: string, schemas: DomainSchema[]): CopiedTable[] {
  // openDatabase would create an empty store where none is: a mistyped path copies nothing.
  if (!fs.existsSync(file)) throw new StoreError(`no SQLite store at ${file}`);
  const src = openDatabase(file, schemas);
  let dst: PgDb | undefined;
  try {
    dst = new PgDb(url);
    migrate(dst, schemas, false);
    const tables = domainTables(src);
    const target = dst;
    for (const table of tables) {
      const n = (target.prepare(`SELECT COUNT(*) AS n FROM ${table}`).get() as { n: number }).n;
      if (n > 0)
        throw new StoreError(
          `the target database is not empty: ${table} has ${n} rows; migrate into an empty database`,
        );
    }
    return target.transaction(() =>
      tables.map((table) => {
        const rows = src.prepare(`SELECT * FROM ${table} ORDER BY rowid`).all() as Record<string, unknown>[];
        for (const row of rows) {
          const cols = Object.keys(row);
          target
            .prepare(`INSERT INTO ${table} (${cols.join(', ')}) VALUES (${cols.map(() => '?').join(', ')})`)
            .run(...cols.map((c) => row[c]));
        }
        return { table, rows: rows.length };
      }),
    )();
  } finally {
    src.close();
    dst?.close();
  }
}
