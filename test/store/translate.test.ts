/**
 * SQLite → Postgres statement translation (`store/postgres/translate.ts`), text in, text out. What
 * the translated statements do on a real server is `postgres.test.ts`'s job.
 */
import { describe, expect, it } from 'vitest';
import { splitStatements, translate } from '../../src/store/postgres/translate.ts';

const keys = (t: string) => (t === 'tlc_links' ? ['out_channel_id', 'out_tlc_id'] : ['id']);

describe('translate', () => {
  it('numbers placeholders, never inside quotes', () => {
    const t = translate(`SELECT '?', "a?b" FROM t WHERE x = ? AND y LIKE '%?%' AND z = ?`, keys);
    expect(t.text).toBe(`SELECT '?', "a?b" FROM t WHERE x = $1 AND y ILIKE '%?%' AND z = $2`);
    expect(t.params).toBe(2);
  });

  it('INSERT OR IGNORE / OR REPLACE become ON CONFLICT on the primary key, REPLACE with a new rowid', () => {
    expect(translate('INSERT OR IGNORE INTO t (id, v) VALUES (?, ?)', keys).text).toBe(
      'INSERT INTO t (id, v) VALUES ($1, $2) ON CONFLICT DO NOTHING',
    );
    expect(
      translate('INSERT OR REPLACE INTO tlc_links (out_channel_id, out_tlc_id, kind) VALUES (?, ?, ?)', keys)
        .text,
    ).toBe(
      'INSERT INTO tlc_links (out_channel_id, out_tlc_id, kind) VALUES ($1, $2, $3) ' +
        'ON CONFLICT (out_channel_id, out_tlc_id) DO UPDATE SET kind = excluded.kind, rowid = DEFAULT',
    );
  });

  it('DDL: 64-bit integers, bytea, byte-order text, an implicit rowid', () => {
    expect(
      translate("CREATE TABLE t (h BLOB PRIMARY KEY, n INTEGER NOT NULL, s TEXT DEFAULT 'TEXT')", keys).text,
    ).toBe(
      `CREATE TABLE t (rowid BIGSERIAL NOT NULL, h BYTEA PRIMARY KEY, n BIGINT NOT NULL, s TEXT COLLATE "C" DEFAULT 'TEXT')`,
    );
    expect(translate('CREATE TABLE IF NOT EXISTS k (id INTEGER PRIMARY KEY, v TEXT)', keys).text).toBe(
      'CREATE TABLE IF NOT EXISTS k (rowid BIGSERIAL NOT NULL, id BIGSERIAL PRIMARY KEY, v TEXT COLLATE "C")',
    );
    expect(translate('ALTER TABLE t ADD COLUMN seq INTEGER', keys).text).toBe(
      'ALTER TABLE t ADD COLUMN seq BIGINT',
    );
  });

  it('quotes mixed-case aliases only', () => {
    expect(translate('SELECT peer_id AS peerId, COUNT(*) AS n FROM p', keys).text).toBe(
      'SELECT peer_id AS "peerId", COUNT(*) AS n FROM p',
    );
  });

  it('splits scripts at semicolons outside quotes', () => {
    expect(splitStatements("CREATE TABLE a (x TEXT DEFAULT ';');\n CREATE INDEX i ON a (x);  ")).toEqual([
      "CREATE TABLE a (x TEXT DEFAULT ';')",
      'CREATE INDEX i ON a (x)',
    ]);
  });
});
