import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { backupNode } from '../../src/store/backup.ts';
import { openDatabase, type SqliteDb } from '../../src/store/db.ts';
import { WalDurability } from '../../src/store/durability.ts';
import { TurnTransactionDb } from '../../src/store/turn-transaction.ts';

const SCHEMA = [
  {
    domain: 't',
    migrations: [
      {
        version: 1,
        up: `CREATE TABLE t (v INTEGER UNIQUE);
             CREATE TABLE big (v TEXT);
             CREATE TABLE parent (id INTEGER PRIMARY KEY);
             CREATE TABLE child (p INTEGER REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED);
             CREATE TABLE doomed (v INTEGER);
             CREATE TRIGGER doom BEFORE INSERT ON doomed BEGIN SELECT RAISE(ROLLBACK, 'doomed'); END;`,
      },
    ],
  },
];

/** The end of this turn of the event loop. */
const turn = () => new Promise((r) => setImmediate(r));

describe('TurnTransactionDb (one SQLite transaction per turn of the event loop)', () => {
  const dirs: string[] = [];
  const dbs: SqliteDb[] = [];
  afterEach(() => {
    for (const db of dbs.splice(0)) if (db.open) db.close();
    for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
  });
  function setup() {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'strand-turn-'));
    dirs.push(dir);
    const file = path.join(dir, 'node.db');
    const raw = openDatabase(file, SCHEMA, { synchronous: 'NORMAL' });
    dbs.push(raw);
    const fatal: Error[] = [];
    const db = new TurnTransactionDb(raw, (e) => fatal.push(e));
    // A second connection: what another process (or a crash) would find in the file.
    const other = new Database(file, { readonly: true });
    dbs.push(other);
    const outside = () =>
      (other.prepare('SELECT v FROM t ORDER BY v').all() as { v: number }[]).map((r) => r.v);
    const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
    return { dir, file, raw, db, fatal, outside, write: (v: number) => insert.run(v) };
  }

  it('commits every write of a turn once, at the end of the turn', async () => {
    const { db, outside, write } = setup();
    write(1);
    write(2);
    db.transaction(() => write(3))();
    expect(outside()).toEqual([]);
    expect(db.prepare('SELECT count(*) AS n FROM t').get()).toEqual({ n: 3 });
    await turn();
    expect(outside()).toEqual([1, 2, 3]);
    expect(db.commits).toBe(1);
    write(4);
    await turn();
    expect(outside()).toEqual([1, 2, 3, 4]);
    expect(db.commits).toBe(2);
    // Statements are prepared once per text.
    expect(db.prepare('SELECT v FROM t')).toBe(db.prepare('SELECT v FROM t'));
  });

  it("keeps a domain's transaction all or nothing, and inTransaction its own", async () => {
    const { db, outside, write } = setup();
    write(1);
    expect(db.inTransaction).toBe(false);
    const seen: boolean[] = [];
    expect(() =>
      db.transaction(() => {
        seen.push(db.inTransaction);
        write(2);
        throw new Error('no');
      })(),
    ).toThrow('no');
    expect(seen).toEqual([true]);
    expect(db.inTransaction).toBe(false);
    await turn();
    expect(outside()).toEqual([1]);
  });

  it('undoes a failed statement alone and commits the rest of the turn', async () => {
    const { db, outside, write, fatal } = setup();
    write(1);
    expect(() => write(1)).toThrow(/UNIQUE/);
    write(2);
    await turn();
    expect(outside()).toEqual([1, 2]);
    expect(fatal).toEqual([]);
    expect(db.commits).toBe(1);
  });

  it('runs the turn again when SQLite rolls it back, and only the failed write fails', async () => {
    const { db, outside, write, fatal } = setup();
    write(1);
    db.transaction(() => {
      write(2);
      write(3);
    })();
    // A domain transaction that fails because SQLite rolled everything back: not restored.
    expect(() =>
      db.transaction(() => {
        write(4);
        db.prepare('INSERT INTO doomed (v) VALUES (1)').run();
      })(),
    ).toThrow('doomed');
    expect(db.prepare('SELECT v FROM t ORDER BY v').all()).toEqual([{ v: 1 }, { v: 2 }, { v: 3 }]);
    write(5);
    expect(() => db.prepare('INSERT INTO doomed (v) VALUES (2)').run()).toThrow('doomed');
    write(6);
    expect(fatal).toEqual([]);
    await turn();
    expect(outside()).toEqual([1, 2, 3, 5, 6]);
    expect(db.commits).toBe(1);
  });

  it('is fatal when a rolled-back turn cannot be run again', async () => {
    const { db, raw, outside, write, fatal } = setup();
    // A disk that is still full when the turn is run again: inserts into t refused from then on.
    let full = false;
    raw.function('still_full', () => (full ? 1 : 0));
    raw.exec(
      "CREATE TRIGGER full_t BEFORE INSERT ON t WHEN still_full() BEGIN SELECT RAISE(ABORT, 'still full'); END",
    );
    write(1);
    full = true;
    expect(() => db.prepare('INSERT INTO doomed (v) VALUES (1)').run()).toThrow('doomed');
    expect(fatal.map((e) => e.message)).toEqual([expect.stringMatching(/could not be restored: still full/)]);
    await turn();
    expect(outside()).toEqual([]);
  });

  it('is fatal when the COMMIT of the turn fails', async () => {
    const { db, raw, outside, write, fatal } = setup();
    write(1);
    db.prepare('INSERT INTO child (p) VALUES (42)').run();
    await turn();
    expect(fatal.map((e) => e.message)).toEqual([expect.stringMatching(/FOREIGN KEY/)]);
    expect(outside()).toEqual([]);
    expect(raw.inTransaction).toBe(false);
  });

  it('commits the turn before the flush, so released output never depends on an uncommitted write', async () => {
    const { file, raw, db, outside, write } = setup();
    const d = new WalDurability(raw, {
      walFile: `${file}-wal`,
      onFatal: (e) => {
        throw e;
      },
      beforeFlush: () => void db.commitTurn(),
    });
    const seenWhenReleased: number[][] = [];
    write(1);
    d.whenDurable(() => seenWhenReleased.push(outside()));
    write(2);
    await d.durable();
    expect(seenWhenReleased).toEqual([[1, 2]]);
    d.close();
  });

  it('takes a complete online backup while the node keeps writing', async () => {
    const { dir, db, write } = setup();
    // ~4 MB: the copy takes many steps (100 pages each), with writes between them.
    const big = db.prepare('INSERT INTO big (v) VALUES (?)');
    for (let i = 0; i < 4000; i++) big.run('x'.repeat(1000));
    for (let i = 0; i < 3000; i++) write(i);
    await turn();
    let next = 3000;
    const writer = setInterval(() => write(next++), 1);
    try {
      // Writes keep coming between the copy's steps. (The hazard itself — a first step taken while
      // a turn's transaction is open copies nothing — depends on the order of immediates and is
      // not forced here; holding turns off is tested below.)
      write(next++);
      const dest = path.join(dir, 'backup');
      await backupNode(dest, { db, storePath: 'strand.db', files: [] });
      const copy = new Database(path.join(dest, 'strand.db'), { readonly: true });
      dbs.push(copy);
      const n = (copy.prepare('SELECT count(*) AS n FROM t').get() as { n: number }).n;
      expect(n).toBeGreaterThanOrEqual(3001);
      expect(copy.prepare('SELECT count(*) AS n FROM big').get()).toEqual({ n: 4000 });
      expect(copy.pragma('integrity_check', { simple: true })).toBe('ok');
    } finally {
      clearInterval(writer);
    }
    // Turns batch again once the backup is done.
    const before = db.commits;
    write(next++);
    write(next++);
    await turn();
    expect(db.commits).toBe(before + 1);
  });

  it('holds turns off while unbatched (an online backup), committing every write at once', async () => {
    const { db, outside, write } = setup();
    write(1);
    let inside: number[] = [];
    await db.unbatched(async () => {
      expect(outside()).toEqual([1]); // the open turn was committed first
      write(2);
      inside = outside();
    });
    expect(inside).toEqual([1, 2]);
    write(3);
    expect(outside()).toEqual([1, 2]);
    await turn();
    expect(outside()).toEqual([1, 2, 3]);
  });

  it('commits the open turn when it closes', () => {
    const { file, db, write } = setup();
    write(7);
    db.close();
    const again = new Database(file, { readonly: true });
    dbs.push(again);
    expect(again.prepare('SELECT v FROM t').all()).toEqual([{ v: 7 }]);
  });
});
