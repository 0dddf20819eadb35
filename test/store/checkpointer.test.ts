/**
 * WAL checkpoints on a worker (`store/checkpointer.ts`): the worker copies committed pages back
 * into the database file while the node's connection goes on writing, the WAL is rewound instead
 * of growing to the node's fallback threshold, nothing committed is lost, and a worker that cannot
 * open the database leaves SQLite's own checkpoints in place.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type Checkpointer, FALLBACK_PAGES, startCheckpointer } from '../../src/store/checkpointer.ts';
import { openDatabase, type SqliteDb } from '../../src/store/db.ts';

const SCHEMA = [
  {
    domain: 't',
    migrations: [{ version: 1, up: 'CREATE TABLE t (k INTEGER PRIMARY KEY, data TEXT NOT NULL)' }],
  },
];
const PAGE = 4096;

describe('Checkpointer (WAL checkpoints on a worker)', () => {
  const dirs: string[] = [];
  const dbs: SqliteDb[] = [];
  const workers: Checkpointer[] = [];
  afterEach(async () => {
    for (const w of workers.splice(0)) await w.stop();
    for (const db of dbs.splice(0)) if (db.open) db.close();
    for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
  });
  function tempDb(): { file: string; db: SqliteDb } {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'strand-checkpoint-'));
    dirs.push(dir);
    const file = path.join(dir, 'node.db');
    const db = openDatabase(file, SCHEMA, { synchronous: 'NORMAL' });
    dbs.push(db);
    return { file, db };
  }
  /** Commits `pages` rows of ~3 KB, one a commit (each dirties at least one page). */
  function writeRows(db: SqliteDb, from: number, rows: number): void {
    const put = db.prepare('INSERT OR REPLACE INTO t (k, data) VALUES (?, ?)');
    for (let i = 0; i < rows; i++) put.run((from + i) % 400, `${from + i}`.padEnd(3000, 'x'));
  }
  const walPages = (file: string) => fs.statSync(`${file}-wal`).size / PAGE;

  it('copies committed pages into the database file from its own connection, and the WAL is rewound', async () => {
    const { file, db } = tempDb();
    const cp = startCheckpointer(db, file, { intervalMs: 5 });
    workers.push(cp);
    expect(await cp.ready).toBe(true);
    // The node's own threshold is now only a bound.
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(FALLBACK_PAGES);
    const dbBytesBefore = fs.statSync(file).size;
    // 40 batches of 150 commits: 6,000 commits, at least 6,000 frames written to the WAL.
    // After each batch the test waits until the worker (every 5 ms) has copied all of it: on a
    // loaded machine a fixed pause once let four batches pile up before the worker ran.
    for (let batch = 0; batch < 40; batch++) {
      writeRows(db, batch * 150, 150);
      await vi.waitFor(async () => expect((await cp.stats()).caughtUp).toBe(true), {
        timeout: 10_000,
        interval: 5,
      });
    }
    expect((await cp.stats()).runs).toBeGreaterThanOrEqual(40);
    // Only a checkpoint writes the database file: 400 rows of 3 KB are there now.
    expect(fs.statSync(file).size).toBeGreaterThan(dbBytesBefore + 400 * 3000);
    // Copied back between batches, the WAL restarted from its beginning: it never grew to hold
    // all 6,000 frames, nor to the node's fallback threshold.
    expect(walPages(file)).toBeLessThan(1000);
    const stats = await cp.stats();
    expect(stats.errors).toBe(0);
    expect(stats.maxFrames).toBeLessThan(1000);
    // Everything committed is there, whole.
    expect(db.prepare('SELECT count(*) FROM t').pluck().get()).toBe(400);
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
  });

  it('loses nothing committed while it copies: the database reopened from its file alone has every row', async () => {
    const { file, db } = tempDb();
    const cp = startCheckpointer(db, file, { intervalMs: 1 });
    workers.push(cp);
    expect(await cp.ready).toBe(true);
    for (let i = 0; i < 30; i++) {
      writeRows(db, i * 100, 100);
      await new Promise((r) => setTimeout(r, 2));
    }
    await cp.stop();
    db.pragma('wal_checkpoint(TRUNCATE)');
    db.close();
    // The WAL emptied into it (and removed with the last connection), the database file alone
    // holds the last value of every row.
    expect(fs.existsSync(`${file}-wal`) ? walPages(file) : 0).toBe(0);
    const again = openDatabase(file, SCHEMA, { synchronous: 'NORMAL' });
    dbs.push(again);
    const last = again.prepare('SELECT data FROM t WHERE k = ?').pluck();
    for (let k = 0; k < 400; k++) {
      const newest = 2999 - ((2999 - k) % 400);
      expect((last.get(k) as string).trimEnd().replace(/x+$/, '')).toBe(String(newest));
    }
  });

  it('leaves SQLite its own checkpoints when the worker cannot open the database', async () => {
    const { file, db } = tempDb();
    db.pragma(`wal_autocheckpoint = ${FALLBACK_PAGES}`);
    const reasons: string[] = [];
    const cp = startCheckpointer(db, path.join(path.dirname(file), 'missing.db'), {
      onUnavailable: (r) => reasons.push(r),
    });
    workers.push(cp);
    expect(await cp.ready).toBe(false);
    expect(reasons).toHaveLength(1);
    expect(reasons[0]).toMatch(/missing\.db|unable to open|does not exist/i);
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
  });

  it('stops: its connection closes and it answers no more', async () => {
    const { file, db } = tempDb();
    const cp = startCheckpointer(db, file, { intervalMs: 5 });
    expect(await cp.ready).toBe(true);
    writeRows(db, 0, 50);
    await vi.waitFor(async () => expect((await cp.stats()).runs).toBeGreaterThan(0), { timeout: 5000 });
    await cp.stop();
    await cp.stop(); // twice is harmless
    expect(await cp.stats()).toEqual({ runs: 0, busy: 0, errors: 0, maxFrames: 0, caughtUp: false });
    // The node's connection is now the only one: closing it checkpoints and removes the WAL.
    db.close();
    expect(fs.existsSync(`${file}-wal`)).toBe(false);
  });
});
