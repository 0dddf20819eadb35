/**
 * `TlcLinks.get` answers from memory what was read or written outside a domain transaction, for
 * every `TlcLinks` on the same database, and never what a rolled-back transaction or a failed
 * write left behind. Each case also reads the table behind the cache's back: they must agree.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { paymentLinkSchema, type TlcLink, TlcLinks } from '../../src/payment/links.ts';
import { type Db, openDatabase } from '../../src/store/db.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function freshDb(): Db {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'strand-links-'));
  dirs.push(dir);
  return openDatabase(path.join(dir, 'links.db'), [paymentLinkSchema]);
}

const origin = (n: number): TlcLink => ({
  kind: 'origin',
  paymentHash: `0x${String(n).padStart(64, '0')}`,
  attemptId: `a${n}`,
});

/** The link as the table holds it, read without the cache. */
const stored = (db: Db, ch: string, id: bigint) =>
  db
    .prepare('SELECT kind, attempt_id FROM tlc_links WHERE out_channel_id = ? AND out_tlc_id = ?')
    .get(ch, id.toString());

describe('TLC link cache', () => {
  it('is shared by every TlcLinks of a database and follows puts and removes', () => {
    const db = freshDb();
    const a = new TlcLinks(db);
    const b = new TlcLinks(db);
    expect(b.get('0xc', 1n)).toBeUndefined(); // remembered as absent
    a.put('0xc', 1n, origin(1));
    expect(b.get('0xc', 1n)).toEqual(origin(1));
    a.put('0xc', 1n, origin(2));
    expect(b.get('0xc', 1n)).toEqual(origin(2));
    expect(stored(db, '0xc', 1n)).toEqual({ kind: 'origin', attempt_id: 'a2' });
    b.remove('0xc', 1n);
    expect(a.get('0xc', 1n)).toBeUndefined();
    expect(stored(db, '0xc', 1n)).toBeUndefined();
    db.close();
  });

  it('forgets what a rolled-back transaction wrote, and caches nothing read inside one', () => {
    const db = freshDb();
    const links = new TlcLinks(db);
    links.put('0xc', 1n, origin(1));
    expect(() =>
      db.transaction(() => {
        links.put('0xc', 1n, origin(9));
        links.put('0xc', 2n, origin(8));
        expect(links.get('0xc', 1n)).toEqual(origin(9)); // the transaction sees its own write
        links.remove('0xc', 1n);
        throw new Error('roll back');
      })(),
    ).toThrow('roll back');
    expect(links.get('0xc', 1n)).toEqual(origin(1));
    expect(links.get('0xc', 2n)).toBeUndefined();
    // Committed inside a transaction: read again from the table afterwards.
    db.transaction(() => links.put('0xc', 3n, origin(3)))();
    expect(links.get('0xc', 3n)).toEqual(origin(3));
    db.close();
  });

  it('a write that fails leaves the cache as the table is', () => {
    const db = freshDb();
    const links = new TlcLinks(db);
    links.put('0xc', 1n, origin(1));
    db.exec(
      "CREATE TRIGGER no_more BEFORE INSERT ON tlc_links WHEN NEW.attempt_id = 'a7' BEGIN SELECT RAISE(ABORT, 'refused'); END",
    );
    expect(() => links.put('0xc', 1n, origin(7))).toThrow('refused');
    expect(links.get('0xc', 1n)).toEqual(origin(1));
    expect(stored(db, '0xc', 1n)).toEqual({ kind: 'origin', attempt_id: 'a1' });
    db.close();
  });
});
