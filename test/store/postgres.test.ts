/**
 * The Postgres store (`store/postgres/pg-db.ts`) on a real Postgres server: every domain's
 * migrations apply, and the same calls through each domain's own store code give the same
 * answers as on a SQLite file — upserts, `INSERT OR IGNORE/REPLACE`, blobs, 64-bit integers,
 * aliases, paging order, rollbacks of transactions and savepoints.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CchOrderStore, cchSchema } from '../../src/cch/store.ts';
import type { Channel } from '../../src/channel/state.ts';
import { ChannelStore, channelSchema } from '../../src/channel/store.ts';
import { StorageError } from '../../src/codec/errors.ts';
import { GraphStore, graphSchema } from '../../src/graph/store.ts';
import { invoiceSchema, invoiceTables } from '../../src/invoice/store.ts';
import { createPeerStore, peerSchema } from '../../src/p2p/peer-store.ts';
import { paymentLinkSchema, TlcLinks } from '../../src/payment/links.ts';
import { paymentRecord } from '../../src/payment/record.ts';
import type { PaymentSession } from '../../src/payment/session.ts';
import { viewOf } from '../../src/payment/settled.ts';
import { PaymentStore, paymentSchema } from '../../src/payment/store.ts';
import { backupNode } from '../../src/store/backup.ts';
import { copySqliteToPostgres } from '../../src/store/copy.ts';
import { type Db, type DomainSchema, openDatabase } from '../../src/store/db.ts';
import { checkNodeOwnership, nodeMetaSchema } from '../../src/store/node-meta.ts';
import { openStore } from '../../src/store/open.ts';
import { PgDb } from '../../src/store/postgres/pg-db.ts';
import { WatchtowerStore, watchtowerSchema } from '../../src/watchtower/store.ts';
import { freshDatabase, type PostgresServer, pgQuery, startPostgres } from '../helpers/postgres.ts';
import { attempt, hex, SESSIONS, SOURCE, session } from '../payments/settled-fixtures.ts';

const SCHEMAS: DomainSchema[] = [
  nodeMetaSchema,
  invoiceSchema,
  peerSchema,
  channelSchema,
  graphSchema,
  paymentSchema,
  paymentLinkSchema,
  watchtowerSchema,
  cchSchema,
];

let server: PostgresServer;
let dir: string;
beforeAll(async () => {
  server = await startPostgres();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'strand-pgcmp-'));
}, 120_000);
afterAll(async () => {
  await server?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/** Runs `script` on a new SQLite file and on a new Postgres database; both results. */
async function onBoth<T>(script: (db: Db) => T): Promise<{ sqlite: T; postgres: T }> {
  const lite = openDatabase(path.join(dir, `${Math.random()}.db`), SCHEMAS);
  const pg = await openStore({ url: await freshDatabase(server), file: '' }, SCHEMAS);
  try {
    return { sqlite: script(lite), postgres: script(pg) };
  } finally {
    lite.close();
    pg.close();
  }
}

const hash = (n: number) => new Uint8Array(32).fill(n);

describe('postgres store', () => {
  it('applies every domain migration once and refuses a store of another node', async () => {
    const url = await freshDatabase(server);
    const db = await openStore({ url, file: '' }, SCHEMAS);
    checkNodeOwnership(db, '02aa');
    db.close();
    const again = await openStore({ url, file: '' }, SCHEMAS);
    try {
      expect(() => checkNodeOwnership(again, '02bb')).toThrow(/belongs to node 02aa/);
    } finally {
      again.close();
    }
    const versions = await pgQuery<{ domain: string; version: number }>(
      url,
      'SELECT domain, version FROM schema_version ORDER BY domain',
    );
    expect(versions.map((v) => `${v.domain}:${v.version}`)).toEqual(
      SCHEMAS.map((s) => `${s.domain}:${s.migrations.length}`).sort(),
    );
  }, 60_000);

  it('invoices and preimages: blobs, INSERT OR IGNORE, coalesce', async () => {
    const r = await onBoth((db) => {
      const t = invoiceTables(db);
      const first = t.insert(hash(1), 'fibd1', 1_700_000_000_000);
      const dup = t.insert(hash(1), 'fibd-other', 1_700_000_000_001);
      t.setStatus(hash(1), 'Received', 5, 12345678901234567890n);
      t.setStatus(hash(1), 'Paid', 6);
      t.putPreimage(hash(1), hash(7), 1);
      t.putPreimage(hash(1), hash(8), 2);
      const pre = t.getPreimage(hash(1));
      return { first, dup, row: t.get(hash(1)), pre: pre && Buffer.from(pre).toString('hex') };
    });
    expect(r.sqlite.first).toBe(true);
    expect(r.sqlite.dup).toBe(false);
    expect(r.sqlite.row).toEqual({ invoice: 'fibd1', status: 'Paid', receivedAmount: 12345678901234567890n });
    expect(r.postgres).toEqual(r.sqlite);
  }, 60_000);

  it('settled payments: the same pages, records and counts on both; older sessions migrate', async () => {
    const sessions = Array.from({ length: 30 }, (_, i) => Object.values(SESSIONS)[i % 5]!());
    const live = {
      ...sessions[0]!,
      paymentHash: hex(32),
      status: 'Inflight' as const,
      attempts: [attempt(1, 'Inflight', 2, 1n)],
    };
    const r = await onBoth((db) => {
      const s = new PaymentStore(db);
      for (const x of [...sessions, live]) s.put(x);
      const pages: string[][] = [];
      let after: string | undefined;
      for (;;) {
        const page = s.list({ limit: 7, after }).map((v) => v.paymentHash);
        pages.push(page);
        if (page.length < 7) break;
        after = page.at(-1);
      }
      return {
        pages,
        failed: s.list({ status: 'Failed', limit: 100 }).map((v) => v.paymentHash),
        records: sessions.map((x) => paymentRecord(s.view(x.paymentHash)!, SOURCE)),
        counts: s.countByStatus(),
        settled: (db.prepare('SELECT COUNT(*) AS n FROM payments_settled').get() as { n: number | string }).n,
      };
    });
    expect(r.postgres).toEqual(r.sqlite);
    expect(Number(r.sqlite.settled)).toBe(30);
    expect(r.sqlite.records).toEqual(sessions.map((x) => paymentRecord(viewOf(x), SOURCE)));
    expect(r.sqlite.pages.flat()).toEqual([...sessions, live].map((x) => x.paymentHash).sort());

    // A store of before the settled table, on Postgres: its ended sessions move on migration.
    const url = await freshDatabase(server);
    const v1 = SCHEMAS.map((d) => (d === paymentSchema ? { ...d, migrations: d.migrations.slice(0, 1) } : d));
    const old = await openStore({ url, file: '' }, v1);
    for (const x of [...sessions, live])
      old.prepare('INSERT INTO payment_sessions (payment_hash, status, body) VALUES (?, ?, ?)').run(
        x.paymentHash,
        x.status,
        JSON.stringify(x, (_k, v) => (typeof v === 'bigint' ? { $big: v.toString(16) } : v)),
      );
    old.close();
    const db = await openStore({ url, file: '' }, SCHEMAS);
    try {
      const s = new PaymentStore(db);
      expect(sessions.map((x) => paymentRecord(s.view(x.paymentHash)!, SOURCE))).toEqual(r.sqlite.records);
      expect(s.get(live.paymentHash)?.status).toBe('Inflight');
      expect(s.countByStatus()).toEqual(r.sqlite.counts);
    } finally {
      db.close();
    }
  }, 60_000);

  it('payment sessions page in byte order of the hash; metrics count as numbers', async () => {
    const r = await onBoth((db) => {
      const s = new PaymentStore(db);
      const hashes = ['0xff', '0xAb', '0x0a', '0xab', '0x_1'];
      // Not 32-byte hashes: kept whole, in the text-keyed table, even when ended.
      for (const [i, h] of hashes.entries())
        s.put({ ...session({ attempts: [] }), paymentHash: h, status: i % 2 ? 'Success' : 'Inflight' });
      const counts = db.prepare('SELECT status, COUNT(*) AS n FROM payment_sessions GROUP BY status').all();
      return {
        page1: s.list({ limit: 2 }).map((x) => x.paymentHash),
        page2: s.list({ limit: 10, after: '0xAb' }).map((x) => x.paymentHash),
        inflight: s.list({ status: 'Inflight', limit: 10 }).map((x) => x.paymentHash),
        unfinished: s.unfinished().length,
        counts: (counts as { status: string; n: number }[]).sort((a, b) => (a.status < b.status ? -1 : 1)),
      };
    });
    expect(r.sqlite.page1).toEqual(['0x0a', '0xAb']);
    expect(r.sqlite.counts).toEqual([
      { status: 'Inflight', n: 3 },
      { status: 'Success', n: 2 },
    ]);
    expect(r.postgres).toEqual(r.sqlite);
  }, 60_000);

  it('TLC links: INSERT OR REPLACE, held parts in arrival order, outcomes by rowid', async () => {
    const r = await onBoth((db) => {
      const l = new TlcLinks(db);
      l.put('0xc1', 1n, { kind: 'origin', paymentHash: '0xAA', attemptId: 'a1' });
      l.put('0xc1', 1n, { kind: 'origin', paymentHash: '0xAA', attemptId: 'a2' });
      l.put('0xc1', 2n, {
        kind: 'forward',
        paymentHash: '0xaa',
        inChannelId: '0xc0',
        inTlcId: 9n,
        sharedSecret: '0x55',
      });
      for (const [i, ch] of ['0xz', '0xa', '0xm'].entries())
        l.hold({ channelId: ch, tlcId: BigInt(i), paymentHash: '0xh', amount: 10n, holdExpireAt: 100 + i });
      l.recordOutcome('0xc9', 3n, { preimage: hash(3) });
      l.recordOutcome('0xc1', 4n, { errorPacket: new Uint8Array([1, 2]) });
      return {
        link: l.get('0xc1', 1n),
        withHash: l.withHash('0xaA').map((x) => `${x.channelId}/${x.tlcId}`),
        forwarded: l.forwardedFrom('0xc0', 9n),
        ofAttempt: l.ofAttempt('a2'),
        held: l.held('0xh').map((h) => h.channelId),
        expired: l.expiredHolds(101),
        outcomes: l.outcomes().map((o) => `${o.channelId}/${o.tlcId}`),
      };
    });
    expect(r.sqlite.held).toEqual(['0xz', '0xa', '0xm']);
    expect(r.sqlite.outcomes).toEqual(['0xc9/3', '0xc1/4']);
    expect(r.sqlite.link).toEqual({ kind: 'origin', paymentHash: '0xAA', attemptId: 'a2' });
    expect(r.postgres).toEqual(r.sqlite);
  }, 60_000);

  it('peers, watchtower, cch orders, graph history: aliases, LIMIT, substr, duplicates', async () => {
    const r = await onBoth((db) => {
      const peers = createPeerStore(db);
      peers.save('02p', 'Qm1', '/ip4/1.2.3.4/tcp/1');
      peers.touch('02p', '/ip4/1.2.3.4/tcp/1');
      const w = new WatchtowerStore(db);
      w.insertPreimage('', `0x${'ab'.repeat(32)}`, '0x01');
      w.setOutcome('lock', 'revoked', null);
      w.setOutcome('lock', 'closed', '0xtx');
      const cch = new CchOrderStore(db);
      const order = { paymentHash: '0xp', status: 'Pending', createdAt: 1, amountSats: 5n, feeSats: 1n };
      cch.insert(order as never);
      let dup = '';
      try {
        cch.insert(order as never);
      } catch (e) {
        dup = (e as Error).message;
      }
      const g = new GraphStore(db);
      g.saveHistory(
        'op',
        'Forward' as never,
        {
          failTime: 1,
          failAmount: 2n,
          successTime: 2 ** 40,
          successAmount: 3n,
        } as never,
      );
      return {
        peers: peers.all().map((p) => ({ ...p, lastConnectedAt: typeof p.lastConnectedAt })),
        search: w.searchPreimage(`0x${'ab'.repeat(20)}`),
        outcome: w.outcome('lock'),
        dup,
        unfinished: cch.unfinished().length,
        history: g.loadHistory(),
        latest: g.latestCursor(),
      };
    });
    expect(r.sqlite.peers).toEqual([
      { pubkey: '02p', peerId: 'Qm1', address: '/ip4/1.2.3.4/tcp/1', lastConnectedAt: 'number' },
    ]);
    expect(r.sqlite.dup).toMatch(/duplicated key/);
    expect(r.postgres).toEqual(r.sqlite);
  }, 60_000);

  it('a failed transaction leaves nothing; a failed nested one only undoes itself', async () => {
    const r = await onBoth((db) => {
      const store = new ChannelStore(db);
      const links = new TlcLinks(db);
      const ch = (state: string, tlcs: bigint[]) =>
        ({
          tempId: '0x01',
          id: '0x02',
          peer: 'p',
          state,
          createdAt: 1,
          tlcs: tlcs.map((id) => ({ id })),
        }) as unknown as Channel;
      store.save(ch('CHANNEL_READY', [0n]));
      let failed = '';
      try {
        store.saveWith(ch('SHUTTING_DOWN', []), () => {
          links.recordOutcome('0x02', 0n, { preimage: hash(1) });
          throw new Error('boom');
        });
      } catch (e) {
        failed = (e as Error).message;
      }
      db.transaction(() => {
        links.recordOutcome('0x02', 5n, { preimage: hash(5) });
        try {
          db.transaction(() => {
            links.recordOutcome('0x02', 6n, { preimage: hash(6) });
            throw new Error('inner');
          })();
        } catch {}
      })();
      // Savepoints in every shape: empty, failing before or after a write, nested two deep.
      const rec = (n: bigint) => links.recordOutcome('0x02', n, { preimage: hash(Number(n)) });
      const swallow = (f: () => void) => {
        try {
          f();
        } catch {}
      };
      db.transaction(() => {
        db.transaction(() => {})();
        swallow(() =>
          db.transaction(() => {
            throw new Error('x');
          })(),
        );
        rec(7n);
        db.transaction(() => rec(8n))();
        swallow(() =>
          db.transaction(() => {
            rec(9n);
            db.transaction(() => rec(10n))();
            throw new Error('y');
          })(),
        );
      })();
      swallow(() =>
        db.transaction(() => {
          db.transaction(() => rec(11n))();
          throw new Error('z');
        })(),
      );
      db.transaction(() => {})();
      return {
        failed,
        inTransaction: db.inTransaction,
        state: new ChannelStore(db).get('0x02')?.state,
        outcomes: links.outcomes().map((o) => o.tlcId),
        count: store.nextCount() + store.nextCount(),
      };
    });
    expect(r.sqlite).toEqual({
      failed: 'boom',
      inTransaction: false,
      state: 'CHANNEL_READY',
      outcomes: [5n, 7n, 8n],
      count: 1,
    });
    expect(r.postgres).toEqual(r.sqlite);
  }, 60_000);

  it('the lease: one holder at a time, handed over on close, and a holder whose lease is taken writes nothing', async () => {
    const url = await freshDatabase(server);
    const a = new PgDb(url);
    const b = new PgDb(url);
    try {
      expect(a.takeLease('02node', 'A', 60_000)).toEqual({ held: true });
      expect(b.takeLease('02node', 'B', 60_000)).toEqual({ held: false, holder: 'A' });
      a.close();
      expect(b.takeLease('02node', 'B', 3000)).toEqual({ held: true });
      b.exec('CREATE TABLE t (v INTEGER)');
      const lost = new Promise<string>((resolve) => {
        b.onLeaseLost = resolve;
      });
      await pgQuery(url, "UPDATE strand_lease SET holder = 'C' WHERE node_key = '02node'");
      expect(await lost).toMatch(/held by C/);
      expect(() => b.prepare('INSERT INTO t (v) VALUES (?)').run(1)).toThrow(/lease lost/);
      expect(await pgQuery(url, 'SELECT * FROM t')).toEqual([]);
    } finally {
      a.close();
      b.close();
    }
  }, 60_000);

  it('a leader whose store connection is cut gives the lease up (the node exits) instead of staying leader', async () => {
    const url = await freshDatabase(server);
    const db = new PgDb(url);
    try {
      expect(db.takeLease('02cut', 'A', 60_000)).toEqual({ held: true });
      const lost = new Promise<string>((resolve) => {
        db.onLeaseLost = resolve;
      });
      const [{ pid }] = db.prepare('SELECT pg_backend_pid() AS pid').all() as { pid: number }[];
      await pgQuery(url, 'SELECT pg_terminate_backend($1)', [pid]);
      expect(await lost).toMatch(/connection/);
      expect(() => db.prepare('SELECT 1').get()).toThrow(/lease lost/);
    } finally {
      db.close();
    }
  }, 60_000);

  it('a statement stuck behind a lock: after query_timeout the store is abandoned, coded, the session ended and the lease given up', async () => {
    const url = await freshDatabase(server);
    const setup = new PgDb(url);
    setup.exec('CREATE TABLE t (v INTEGER)');
    setup.close();
    const db = new PgDb(`${url}?query_timeout=1500`);
    expect(db.timeoutMs).toBe(1500);
    // Another connection holds the table: the node's read waits on the lock.
    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    try {
      expect(db.takeLease('02hung', 'A', 60_000)).toEqual({ held: true });
      const lost: string[] = [];
      db.onLeaseLost = (reason, cause) => lost.push(`${cause}: ${reason}`);
      const [{ pid }] = db.prepare('SELECT pg_backend_pid() AS pid').all() as { pid: number }[];
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE t IN ACCESS EXCLUSIVE MODE');
      const started = Date.now();
      let thrown: unknown;
      try {
        db.prepare('INSERT INTO t (v) VALUES (?)').run(1);
      } catch (e) {
        thrown = e;
      }
      const waited = Date.now() - started;
      expect(thrown).toBeInstanceOf(StorageError);
      expect((thrown as StorageError).code).toBe('POSTGRES_TIMEOUT');
      expect((thrown as Error).message).toMatch(/did not answer within 1500 ms/);
      expect(waited).toBeGreaterThanOrEqual(1500);
      expect(waited).toBeLessThan(1500 + 6000);
      // Told at once (the node exits), and once only.
      expect(lost).toHaveLength(1);
      expect(lost[0]).toMatch(/^store_timeout: .*did not answer within 1500 ms/);
      // Every later call is refused with the same failure: no answer of the hung one is ever read as another's.
      expect(() => db.prepare('SELECT 1 AS one').get()).toThrow(/did not answer within 1500 ms/);
      // The hung session was ended on the server: its insert never lands once the lock is free.
      const alive = async () =>
        (await holder.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [pid])).rowCount;
      for (let i = 0; i < 50 && (await alive()) !== 0; i++) await new Promise((r) => setTimeout(r, 100));
      expect(await alive()).toBe(0);
      await holder.query('COMMIT');
      expect((await holder.query('SELECT * FROM t')).rows).toEqual([]);
      // The lease was not handed over: it runs out, so a standby waits for the lease period.
      expect((await holder.query("SELECT holder FROM strand_lease WHERE node_key = '02hung'")).rows).toEqual([
        { holder: 'A' },
      ]);
    } finally {
      db.close();
      await holder.end();
    }
  }, 60_000);

  it('pg_sleep longer than query_timeout: abandoned without a lease too; a bad query_timeout is refused', async () => {
    const url = await freshDatabase(server);
    const db = new PgDb(`${url}?query_timeout=800`);
    try {
      expect(() => db.prepare('SELECT pg_sleep(30)').get()).toThrow(/POSTGRES_TIMEOUT/);
      expect(() => db.exec('SELECT 1')).toThrow(/POSTGRES_TIMEOUT/);
    } finally {
      db.close();
    }
    expect(() => new PgDb(`${url}?query_timeout=soon`)).toThrow(
      /query_timeout must be a number of milliseconds/,
    );
    // Other parameters of the URL reach the connection untouched.
    const other = new PgDb(`${url}?application_name=strand_t&query_timeout=5000`);
    try {
      expect(other.prepare('SELECT current_setting(?) AS v').get('application_name')).toEqual({
        v: 'strand_t',
      });
    } finally {
      other.close();
    }
    expect(new PgDb(url).timeoutMs).toBe(120_000);
    // store.timeout_ms, or the URL's query_timeout: one of them, not both.
    const configured = new PgDb(url, 4000);
    try {
      expect(configured.timeoutMs).toBe(4000);
    } finally {
      configured.close();
    }
    expect(() => new PgDb(`${url}?query_timeout=5000`, 4000)).toThrow(
      'store.timeout_ms and the query_timeout of store.url both set: keep one',
    );
  }, 60_000);

  it('backup_now on Postgres: a SQLite node store holding every row, in order, from one snapshot; it migrates back', async () => {
    const url = await freshDatabase(server);
    const db = (await openStore({ url, file: '' }, SCHEMAS)) as PgDb;
    const dest = path.join(dir, 'pg-backup');
    try {
      checkNodeOwnership(db, '02aa');
      const t = invoiceTables(db);
      for (let i = 1; i <= 20; i++) t.insert(hash(i), `fibd${i}`, 1_700_000_000_000 + i);
      t.setStatus(hash(3), 'Received', 5, 12345678901234567890n);
      t.putPreimage(hash(3), hash(9), 1);
      const links = new TlcLinks(db);
      for (const [i, ch] of ['0xz', '0xa', '0xm'].entries())
        links.hold({
          channelId: ch,
          tlcId: BigInt(i),
          paymentHash: '0xh',
          amount: 10n,
          holdExpireAt: 100 + i,
        });
      links.put('0xc1', 1n, { kind: 'origin', paymentHash: '0xAA', attemptId: 'a1' });
      links.put('0xc1', 1n, { kind: 'origin', paymentHash: '0xAA', attemptId: 'a2' });
      const payments = new PaymentStore(db);
      payments.put({ paymentHash: '0xff', status: 'Inflight' } as unknown as PaymentSession);

      // The annotation runs on the finished copy (as the node's marks its channels); a write the
      // node makes meanwhile (here, from inside it) is in the store, not in the copy.
      const r = await backupNode(dest, {
        db,
        files: [],
        storePath: 'fiber/store/strand.db',
        annotate: (copy) => {
          t.insert(hash(99), 'fibd-after', 1);
          return { invoices: (copy.prepare('SELECT COUNT(*) AS n FROM invoices').get() as { n: number }).n };
        },
      });
      expect(r.path).toBe(dest);
      expect(r.size).toBeGreaterThan(0);
      expect(JSON.parse(fs.readFileSync(path.join(dest, 'backup.json'), 'utf8'))).toMatchObject({
        format: 1,
        source: 'postgres',
        invoices: 20,
      });

      const copy = openDatabase(path.join(dest, 'fiber/store/strand.db'), SCHEMAS);
      try {
        // Every table: the same rows, in the same order (rowid order on both sides), with the same values.
        const tables = (
          copy
            .prepare(
              "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
            )
            .all() as { name: string }[]
        ).map((x) => x.name);
        expect(tables).toContain('invoices');
        for (const table of tables) {
          const order = table === 'schema_version' ? 'domain' : 'rowid';
          const want = (
            db.prepare(`SELECT * FROM ${table} ORDER BY ${order}`).all() as { invoice?: string }[]
          ).filter((row) => row.invoice !== 'fibd-after');
          const got = copy.prepare(`SELECT * FROM ${table} ORDER BY ${order}`).all();
          expect(got, table).toEqual(want);
          if (table === 'invoices') expect(got).toHaveLength(20);
        }
        expect(invoiceTables(copy).get(hash(3))).toEqual(invoiceTables(db).get(hash(3)));
        expect(new TlcLinks(copy).held('0xh').map((h) => h.channelId)).toEqual(['0xz', '0xa', '0xm']);
        expect(new TlcLinks(copy).get('0xc1', 1n)).toEqual({
          kind: 'origin',
          paymentHash: '0xAA',
          attemptId: 'a2',
        });
        expect(() => checkNodeOwnership(copy, '02bb')).toThrow(/belongs to node 02aa/);
      } finally {
        copy.close();
      }
    } finally {
      db.close();
    }
    // Back to a Postgres database: the store a node would find there is the backup's.
    const restored = await freshDatabase(server);
    copySqliteToPostgres(path.join(dest, 'fiber/store/strand.db'), restored, SCHEMAS);
    const back = await openStore({ url: restored, file: '' }, SCHEMAS);
    try {
      expect(invoiceTables(back).get(hash(3))).toMatchObject({
        status: 'Received',
        receivedAmount: 12345678901234567890n,
      });
      expect(invoiceTables(back).get(hash(99))).toBeUndefined();
    } finally {
      back.close();
    }
  }, 60_000);
});
