/**
 * `strand store migrate`: copies a node's SQLite store into an empty Postgres database, every
 * table of every domain, row by row in the source's insertion order, in one transaction (all or
 * nothing). The source is brought to this build's schema first (as a node start would do) and the
 * target gets the same migrations, so both sides have the same tables and versions; a target
 * that already holds rows is refused rather than merged.
 */
import fs from 'node:fs';
import { StoreError } from '../codec/index.ts';
import { type DomainSchema, migrate, openDatabase } from './db.ts';
import { PgDb } from './postgres/pg-db.ts';

export interface CopiedTable {
  table: string;
  rows: number;
}

export function copySqliteToPostgres(file: string, url: string, schemas: DomainSchema[]): CopiedTable[] {
  // openDatabase would create an empty store where none is: a mistyped path copies nothing.
  if (!fs.existsSync(file)) throw new StoreError(`no SQLite store at ${file}`);
  const src = openDatabase(file, schemas);
  let dst: PgDb | undefined;
  try {
    dst = new PgDb(url);
    migrate(dst, schemas, false);
    const tables = (
      src
        .prepare(
          "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> 'schema_version' ORDER BY name",
        )
        .all() as { name: string }[]
    ).map((r) => r.name);
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
