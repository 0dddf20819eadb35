/**
 * The Postgres store batched by turns (`PgDb.enableTurns`, as the node runs it), on a real
 * Postgres server, watched through a second connection: a turn's writes commit together at the
 * end of the turn; domain transactions inside it are savepoints; a failed statement costs only
 * itself (the turn is rolled back and run again); the durability gate holds output until the
 * turn's COMMIT has returned, and a COMMIT that fails lets nothing out.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DomainSchema } from '../../src/store/db.ts';
import { WalDurability } from '../../src/store/durability.ts';
import { openStore } from '../../src/store/open.ts';
import { PgDb } from '../../src/store/postgres/pg-db.ts';
import { freshDatabase, type PostgresServer, pgQuery, startPostgres } from '../helpers/postgres.ts';

const SCHEMA: DomainSchema = {
  domain: 'turns',
  migrations: [
    {
      version: 1,
      up: `CREATE TABLE items (id INTEGER PRIMARY KEY, v TEXT NOT NULL CHECK (length(v) < 5));`,
    },
  ],
};

let server: PostgresServer;
beforeAll(async () => {
  server = await startPostgres();
}, 120_000);
afterAll(async () => {
  await server?.stop();
});

const nextTurn = () => new Promise((r) => setImmediate(r));

async function turnStore(): Promise<{ db: PgDb; url: string; fatal: Error[] }> {
  const url = await freshDatabase(server);
  const db = (await openStore({ url, file: '' }, [SCHEMA])) as PgDb;
  const fatal: Error[] = [];
  db.enableTurns((e) => fatal.push(e));
  return { db, url, fatal };
}

/** What a second connection sees: the committed ids, in order. */
const committed = async (url: string) =>
  (await pgQuery<{ id: number }>(url, 'SELECT id FROM items ORDER BY id')).map((r) => Number(r.id));

describe('postgres store batched by turns', () => {
  it("a turn's writes are one commit at the end of the turn, reads in it see them", async () => {
    const { db, url, fatal } = await turnStore();
    try {
      const put = db.prepare('INSERT INTO items (id, v) VALUES (?, ?)');
      for (let i = 1; i <= 3; i++) put.run(i, `v${i}`);
      expect(db.prepare('SELECT count(*) AS n FROM items').get()).toEqual({ n: 3 });
      expect(db.inTransaction).toBe(false);
      // Another connection, asked without letting the event loop turn: nothing committed yet.
      const other = new PgDb(url);
      try {
        expect(other.prepare('SELECT count(*) AS n FROM items').get()).toEqual({ n: 0 });
      } finally {
        other.close();
      }
      expect(db.turnCommits).toBe(0);
      await nextTurn();
      expect(await committed(url)).toEqual([1, 2, 3]);
      expect(db.turnCommits).toBe(1);
      // A read alone opens no turn: nothing to commit.
      db.prepare('SELECT * FROM items').all();
      await nextTurn();
      expect(db.turnCommits).toBe(1);
      expect(fatal).toEqual([]);
    } finally {
      db.close();
    }
  }, 60_000);

  it('domain transactions are savepoints of the turn: a failed one undoes only itself', async () => {
    const { db, url, fatal } = await turnStore();
    try {
      const put = db.prepare('INSERT INTO items (id, v) VALUES (?, ?)');
      const swallow = (f: () => void) => {
        try {
          f();
        } catch {}
      };
      put.run(1, 'a');
      db.transaction(() => put.run(2, 'b'))();
      swallow(() =>
        db.transaction(() => {
          put.run(3, 'c');
          db.transaction(() => put.run(4, 'd'))();
          throw new Error('undo 3 and 4');
        })(),
      );
      db.transaction(() => {
        put.run(5, 'e');
        swallow(() =>
          db.transaction(() => {
            put.run(6, 'f');
            put.run(6, 'again'); // primary key: fails inside the savepoint
          })(),
        );
        put.run(7, 'g');
      })();
      put.run(8, 'h');
      // Committing from inside a domain transaction waits until it has ended.
      db.transaction(() => {
        put.run(9, 'i');
        db.commitTurn();
        put.run(10, 'j');
      })();
      await nextTurn();
      await nextTurn();
      expect(await committed(url)).toEqual([1, 2, 5, 7, 8, 9, 10]);
      expect(fatal).toEqual([]);
    } finally {
      db.close();
    }
  }, 60_000);

  it('a statement that fails outside a transaction loses only itself: the turn runs again', async () => {
    const { db, url, fatal } = await turnStore();
    try {
      const put = db.prepare('INSERT INTO items (id, v) VALUES (?, ?)');
      put.run(1, 'a');
      db.transaction(() => put.run(2, 'b'))();
      // Postgres aborts the whole transaction on this one (a CHECK), SQLite would not.
      expect(() => put.run(3, 'too long')).toThrow(/check/i);
      put.run(4, 'd');
      expect(() => db.prepare('SELECT nope FROM items').all()).toThrow(/nope/);
      put.run(5, 'e');
      expect(db.prepare('SELECT count(*) AS n FROM items').get()).toEqual({ n: 4 });
      await nextTurn();
      expect(await committed(url)).toEqual([1, 2, 4, 5]);
      // The first statement of a turn failing leaves no turn behind.
      expect(() => put.run(6, 'too long')).toThrow(/check/i);
      put.run(7, 'g');
      await nextTurn();
      expect(await committed(url)).toEqual([1, 2, 4, 5, 7]);
      expect(fatal).toEqual([]);
    } finally {
      db.close();
    }
  }, 60_000);

  it('the gate holds output until the turn has committed; a snapshot and close commit first', async () => {
    const { db, url, fatal } = await turnStore();
    const gate = new WalDurability(db, {
      onFatal: (e) => fatal.push(e),
      beforeFlush: () => {
        db.commitTurn();
        return false;
      },
    });
    try {
      const put = db.prepare('INSERT INTO items (id, v) VALUES (?, ?)');
      put.run(1, 'a');
      const out: number[] = [];
      gate.whenDurable(() => out.push(db.turnCommits));
      expect(out).toEqual([]);
      await gate.durable();
      expect(out).toEqual([1]);
      expect(await committed(url)).toEqual([1]);
      // Nothing written since: output passes at once.
      gate.whenDurable(() => out.push(-1));
      expect(out).toEqual([1, -1]);
      put.run(2, 'b');
      expect(db.snapshot(() => db.prepare('SELECT count(*) AS n FROM items').get())).toEqual({ n: 2 });
      expect(await committed(url)).toEqual([1, 2]);
      put.run(3, 'c');
      db.close();
      expect(await committed(url)).toEqual([1, 2, 3]);
      expect(fatal).toEqual([]);
    } finally {
      db.close();
    }
  }, 60_000);

  it('a COMMIT that fails is fatal and nothing held leaves', async () => {
    const { db, url, fatal } = await turnStore();
    db.exec('CREATE TABLE later (x INTEGER UNIQUE DEFERRABLE INITIALLY DEFERRED)');
    const gateFatal: Error[] = [];
    const gate = new WalDurability(db, {
      onFatal: (e) => gateFatal.push(e),
      beforeFlush: () => {
        db.commitTurn();
        return false;
      },
    });
    try {
      db.prepare('INSERT INTO items (id, v) VALUES (?, ?)').run(1, 'a');
      const later = db.prepare('INSERT INTO later (x) VALUES (?)');
      later.run(1);
      later.run(1); // checked only at COMMIT
      const out: string[] = [];
      gate.whenDurable(() => out.push('sent'));
      await nextTurn();
      await nextTurn();
      expect(out).toEqual([]);
      expect(fatal.map((e) => e.message).join()).toMatch(/unique|duplicate/i);
      expect(gateFatal).toHaveLength(1);
      expect(await committed(url)).toEqual([]);
    } finally {
      db.close();
    }
  }, 60_000);
});
