/**
 * Online backup: a consistent copy of the node's store, taken with SQLite's online backup API
 * while the node keeps writing, plus the key files, laid out as a node directory:
 *
 *   <dest>/fiber/sk  <dest>/fiber/store/strand.db  <dest>/ckb/key  <dest>/backup.json
 *
 * A store on Postgres is copied into the same SQLite file, every table read on one snapshot of
 * the database (`copyPostgresToSqlite`): the backup is a node directory either way, and goes back
 * to a Postgres database with `strand store migrate`.
 *
 * Restoring is copying these into an empty base directory (or pointing `-d` at the backup) and
 * starting the node with the same FIBER_SECRET_KEY_PASSWORD. What a restore means for channels:
 * README §Backups and restore, `channel/checkpoint.ts`, `channel/outdated.ts`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { checkBackupPath, makeDirs } from './backup-path.ts';
import { copyPostgresToSqlite } from './copy.ts';
import { type Db, openDatabase } from './db.ts';
import { PgDb } from './postgres/pg-db.ts';
import { sqliteOf, TurnTransactionDb } from './turn-transaction.ts';

export interface BackupSources {
  db: Db;
  /** Files copied as they are, by their path relative to the base directory. */
  files: { from: string; to: string }[];
  /** Where the store goes, relative to the backup root. */
  storePath: string;
  /**
   * Runs on the copy of the store before the backup is complete (marks and facts that belong to
   * the copy only); what it returns joins `backup.json`.
   */
  annotate?: (copy: Db) => Record<string, unknown>;
}

export interface BackupResult {
  path: string;
  /** Bytes written, all files together. */
  size: number;
  created_at: number;
}

export class BackupError extends Error {}

export async function backupNode(dest: string, src: BackupSources, now = Date.now()): Promise<BackupResult> {
  const db = src.db;
  const server = db instanceof PgDb && db.schemas ? { db, schemas: db.schemas } : undefined;
  const sqlite = sqliteOf(db);
  if (!sqlite && !server)
    throw new BackupError('this store has no copy method (a Postgres store opened without its schemas)');
  dest = checkBackupPath(dest);
  if (fs.existsSync(dest) && !fs.statSync(dest).isDirectory()) {
    throw new BackupError(`backup path ${dest} exists and is not a directory`);
  }
  if (fs.existsSync(dest) && fs.readdirSync(dest).length > 0) {
    throw new BackupError(`backup path ${dest} exists and is not empty`);
  }
  // Write into a sibling temp directory and rename at the end: a crash mid-backup never leaves
  // something at `dest` that looks complete.
  const tmp = `${dest}.partial-${process.pid}-${now}`;
  makeDirs(path.join(tmp, path.dirname(src.storePath)));
  try {
    if (sqlite) {
      const copy = () => sqlite.backup(path.join(tmp, src.storePath));
      // A backup step never runs while a turn's transaction is open (it would copy nothing).
      await (db instanceof TurnTransactionDb ? db.unbatched(copy) : copy());
    } else if (server) copyPostgresToSqlite(server.db, path.join(tmp, src.storePath), server.schemas);
    let extra: Record<string, unknown> = {};
    if (src.annotate) {
      const copy = openDatabase(path.join(tmp, src.storePath), []);
      try {
        extra = src.annotate(copy);
      } finally {
        copy.close();
      }
    }
    for (const f of src.files) {
      if (!fs.existsSync(f.from)) continue;
      const to = path.join(tmp, f.to);
      makeDirs(path.dirname(to));
      fs.copyFileSync(f.from, to);
      fs.chmodSync(to, fs.statSync(f.from).mode & 0o777);
    }
    fs.writeFileSync(
      path.join(tmp, 'backup.json'),
      `${JSON.stringify({ created_at: now, format: 1, ...(server ? { source: 'postgres' } : {}), ...extra }, null, 1)}\n`,
    );
    if (fs.existsSync(dest)) fs.rmdirSync(dest);
    fs.renameSync(tmp, dest);
  } catch (e) {
    fs.rmSync(tmp, { recursive: true, force: true });
    throw e;
  }
  return { path: dest, size: dirSize(dest), created_at: now };
}

function dirSize(dir: string): number {
  let total = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    total += entry.isDirectory() ? dirSize(p) : fs.statSync(p).size;
  }
  return total;
}
