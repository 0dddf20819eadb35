import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { StorageError, StoreError } from '../../src/codec/errors.ts';
import { type DomainSchema, openDatabase, watchPageQuota } from '../../src/store/db.ts';
import { checkNodeOwnership, nodeMetaSchema } from '../../src/store/node-meta.ts';
import { until } from '../p2p/helpers.ts';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'strand-db-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

const v1: DomainSchema = {
  domain: 'things',
  migrations: [{ version: 1, up: 'CREATE TABLE things (id INTEGER PRIMARY KEY, name TEXT)' }],
};
const v2: DomainSchema = {
  domain: 'things',
  migrations: [
    ...v1.migrations,
    { version: 2, up: (db) => db.exec("ALTER TABLE things ADD COLUMN colour TEXT NOT NULL DEFAULT 'red'") },
  ],
};

describe('store', () => {
  it('opens in WAL mode with synchronous=FULL', () => {
    const db = openDatabase(path.join(dir, 'a.db'), [v1]);
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(db.pragma('synchronous', { simple: true })).toBe(2);
    db.close();
  });

  it('keeps a savepoint journal past 64 KiB in memory, not in a temporary file', () => {
    // The node's domain transactions are savepoints inside the turn's transaction: a large one
    // journals every page it changes. On disk that journal is a deleted file held open.
    const db = openDatabase(path.join(dir, 'a.db'), [v1]);
    const fill = db.prepare('INSERT INTO things (name) VALUES (?)');
    for (let i = 0; i < 100; i++) fill.run('x'.repeat(3000));
    const tempFiles = () =>
      fs
        .readdirSync('/proc/self/fd')
        .map((fd) => {
          try {
            return fs.readlinkSync(`/proc/self/fd/${fd}`);
          } catch {
            return '';
          }
        })
        .filter((target) => target.includes('etilqs_'));
    const before = tempFiles().length;
    db.exec('BEGIN');
    db.transaction(() => db.prepare("UPDATE things SET name = 'y' || name").run())();
    const during = tempFiles().length;
    db.exec('COMMIT');
    expect(db.prepare("SELECT COUNT(*) AS n FROM things WHERE name LIKE 'yx%'").get()).toEqual({ n: 100 });
    expect(during).toBe(before);
    db.close();
  });

  it('applies migrations in order and only once, keeping data', () => {
    const file = path.join(dir, 'a.db');
    let db = openDatabase(file, [v1]);
    db.prepare('INSERT INTO things (name) VALUES (?)').run('x');
    db.close();
    db = openDatabase(file, [v2]);
    expect(db.prepare('SELECT name, colour FROM things').get()).toEqual({ name: 'x', colour: 'red' });
    db.close();
    db = openDatabase(file, [v2]);
    expect(db.prepare("SELECT version FROM schema_version WHERE domain = 'things'").get()).toEqual({
      version: 2,
    });
    db.close();
  });

  it('refuses a database written by a newer schema', () => {
    const file = path.join(dir, 'a.db');
    openDatabase(file, [v2]).close();
    expect(() => openDatabase(file, [v1])).toThrow(StoreError);
    expect(() => openDatabase(file, [v1])).toThrow(
      /'things' is version 2, newer than this build supports \(1\)/,
    );
  });

  it('rolls back a failing migration entirely', () => {
    const file = path.join(dir, 'a.db');
    const broken: DomainSchema = {
      domain: 'things',
      migrations: [{ version: 1, up: 'CREATE TABLE things (id INTEGER); CREATE TABLE oops (' }],
    };
    expect(() => openDatabase(file, [broken])).toThrow();
    const db = openDatabase(file, [v1]);
    expect(db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE name = 'things'").get()).toEqual({
      n: 1,
    });
    db.close();
  });

  it('binds a store to its node key', () => {
    const db = openDatabase(path.join(dir, 'a.db'), [nodeMetaSchema]);
    checkNodeOwnership(db, 'aa');
    checkNodeOwnership(db, 'aa');
    expect(() => checkNodeOwnership(db, 'bb')).toThrow(/belongs to node aa/);
    db.close();
  });

  it('a capped store refuses writes with a coded StorageError, keeps what it had, and writes again once lifted', async () => {
    const db = openDatabase(path.join(dir, 'a.db'), [v1]);
    const insert = db.prepare('INSERT INTO things (name) VALUES (?)');
    insert.run('kept');
    const quota = path.join(dir, 'quota');
    fs.writeFileSync(quota, '1');
    const stop = watchPageQuota(db, quota);
    let caught: unknown;
    try {
      for (let i = 0; i < 10_000; i++) insert.run('x'.repeat(200));
    } catch (e) {
      caught = e;
    }
    const failure = StorageError.from(caught);
    expect(failure).toBeInstanceOf(StoreError);
    expect(failure).toMatchObject({ code: 'SQLITE_FULL', data: { code: 'SQLITE_FULL' } });
    expect(failure!.message).toMatch(/^storage failure: .*\(SQLITE_FULL\)$/);
    expect(StorageError.from(new Error('no such table'))).toBeUndefined();
    fs.writeFileSync(quota, '0');
    await until(() => {
      try {
        insert.run('after');
        return true;
      } catch {
        return false;
      }
    });
    stop();
    expect(db.prepare("SELECT count(*) AS n FROM things WHERE name IN ('kept', 'after')").get()).toEqual({
      n: 2,
    });
    db.close();
  });
});
