/**
 * Settled payments (`payment/settled.ts`, `payment/store.ts`): a session that can no longer
 * change is kept in a compact form, and `get_payment` / `list_payments` answer the same from it
 * as from the whole session; the store pages both tables as one; older stores migrate.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { StoreError } from '../../src/codec/errors.ts';
import { paymentRecord } from '../../src/payment/record.ts';
import type { PaymentSession } from '../../src/payment/session.ts';
import { decodeSettled, encodeSettled, settledOf, viewOf } from '../../src/payment/settled.ts';
import { PaymentStore, paymentSchema, settledKeyAfter } from '../../src/payment/store.ts';
import { type Db, openDatabase } from '../../src/store/db.ts';
import { attempt, hex, SESSIONS, SOURCE } from './settled-fixtures.ts';

describe('the settled form', () => {
  for (const [name, make] of Object.entries(SESSIONS)) {
    it(`${name}: answers get_payment as the session did, in a fraction of its size`, () => {
      const s = make();
      const settled = settledOf(s)!;
      expect(settled).toBeDefined();
      const body = encodeSettled(settled);
      const back = decodeSettled(
        {
          paymentHash: s.paymentHash,
          status: s.status,
          createdAt: s.createdAt,
          lastUpdatedAt: s.lastUpdatedAt,
        },
        body,
      );
      expect(back).toEqual(settled);
      expect(paymentRecord(back, SOURCE)).toEqual(paymentRecord(viewOf(s), SOURCE));
      expect(back).toMatchObject({
        targetPubkey: s.request.targetPubkey,
        amount: s.request.amount,
        preimage: s.preimage,
        invoice: s.request.invoice,
        udtTypeScript: s.request.udtTypeScript,
        tries: s.attempts.length,
      });
      const json = JSON.stringify(s, (_k, v) => (typeof v === 'bigint' ? v.toString(16) : v));
      expect(body.length).toBeLessThan(json.length / 2);
    });
  }

  it('is not taken while the session may still change', () => {
    const done = SESSIONS['an invoice paid over two hops']!();
    expect(settledOf({ ...done, status: 'Inflight' })).toBeUndefined();
    expect(settledOf({ ...done, status: 'Created' })).toBeUndefined();
    // An MPP part still in flight after the payment succeeded.
    expect(
      settledOf({ ...done, attempts: [...done.attempts, attempt(2, 'Inflight', 2, 1n)] }),
    ).toBeUndefined();
    // A trampoline's own payment until its incoming TLC is settled.
    const ctx = { prevChannelId: hex(32), prevTlcId: 3n, onion: '0x00', upstreamSettled: false };
    const tramp = { ...done, request: { ...done.request, trampoline: ctx } } as PaymentSession;
    expect(settledOf(tramp)).toBeUndefined();
    const settledTramp = {
      ...tramp,
      request: { ...tramp.request, trampoline: { ...ctx, upstreamSettled: true } },
    };
    expect(settledOf(settledTramp as PaymentSession)).toBeDefined();
    // Fields not in the form the compact body keeps: the session stays whole.
    expect(settledOf({ ...done, paymentHash: '0xAB' })).toBeUndefined();
    expect(
      settledOf({ ...done, paymentHash: done.paymentHash.toUpperCase().replace('0X', '0x') }),
    ).toBeUndefined();
  });

  it('refuses a damaged body', () => {
    const s = SESSIONS['an invoice paid over two hops']!();
    const body = encodeSettled(settledOf(s)!);
    const row = { paymentHash: s.paymentHash, status: 'Success', createdAt: 1, lastUpdatedAt: 2 };
    expect(() => decodeSettled(row, body.subarray(0, body.length - 1))).toThrow(StoreError);
    expect(() => decodeSettled(row, new Uint8Array([...body, 0]))).toThrow(StoreError);
    expect(() => decodeSettled(row, new Uint8Array([2, ...body.subarray(1)]))).toThrow(StoreError);
    expect(() => decodeSettled({ ...row, status: 'Inflight' }, body)).toThrow(StoreError);
  });
});

function store(): { db: Db; payments: PaymentStore } {
  const db = openDatabase(':memory:', [paymentSchema]);
  return { db, payments: new PaymentStore(db) };
}

/** Rows in the live and the settled table. */
const rowCounts = (db: Db) =>
  db
    .prepare(
      'SELECT (SELECT COUNT(*) FROM payment_sessions) AS live, (SELECT COUNT(*) FROM payments_settled) AS settled',
    )
    .get();

describe('the payment store', () => {
  it('keeps a settled payment compact, and takes it back when it is sent again', () => {
    const { db, payments } = store();
    const failed = SESSIONS['a payment that failed for good']!();
    payments.put({
      ...failed,
      status: 'Inflight',
      failedError: null,
      attempts: [attempt(1, 'Inflight', 2, 1n)],
    });
    expect(payments.get(failed.paymentHash)?.status).toBe('Inflight');
    payments.put(failed);
    expect(payments.get(failed.paymentHash)).toBeUndefined();
    expect(payments.settled(failed.paymentHash)?.failedError).toBe(failed.failedError);
    expect(paymentRecord(payments.view(failed.paymentHash)!, SOURCE)).toEqual(
      paymentRecord(viewOf(failed), SOURCE),
    );
    const rows = () => rowCounts(db);
    expect(rows()).toEqual({ live: 0, settled: 1 });
    // Sent again: a new live session replaces the settled one.
    const again = {
      ...failed,
      status: 'Created' as const,
      failedError: null,
      attempts: [attempt(1, 'Inflight', 2, 1n)],
    };
    payments.put(again);
    expect(rows()).toEqual({ live: 1, settled: 0 });
    expect(payments.view(failed.paymentHash)?.status).toBe('Created');
    expect(payments.preimage(failed.paymentHash)).toBe(null);
  });

  it('answers live sessions as committed: shared by the stores of a connection, not what a caller rolled back', () => {
    const { db, payments } = store();
    const other = new PaymentStore(db);
    const failed = SESSIONS['a payment that failed for good']!();
    const live = {
      ...failed,
      status: 'Inflight' as const,
      failedError: null,
      attempts: [attempt(1, 'Inflight', 2, 1n)],
    };
    payments.put(live);
    expect(other.get(live.paymentHash)).toEqual(live);
    // Saved again inside a caller's transaction that rolls back: the committed session stays.
    expect(() =>
      db.transaction(() => {
        other.put({ ...live, status: 'Created' });
        throw new Error('rolled back');
      })(),
    ).toThrow('rolled back');
    expect(payments.get(live.paymentHash)?.status).toBe('Inflight');
    // Settled by one store: gone from the live ones for every store, kept settled.
    other.put(failed);
    expect(payments.get(live.paymentHash)).toBeUndefined();
    expect(payments.settled(live.paymentHash)?.status).toBe('Failed');
    // A settled payment sent again after a rolled-back attempt at it is still taken back once.
    expect(() =>
      db.transaction(() => {
        payments.put(live);
        throw new Error('rolled back');
      })(),
    ).toThrow('rolled back');
    expect(other.settled(live.paymentHash)?.status).toBe('Failed');
    payments.put(live);
    expect(other.settled(live.paymentHash)).toBeUndefined();
    expect(other.get(live.paymentHash)?.status).toBe('Inflight');
  });

  it('skips the removal of a settled row for a new payment only while the check that found none holds', () => {
    const { db } = store();
    // Counts the removals of settled rows the store asks for.
    let removals = 0;
    const counting: Db = Object.create(db);
    counting.prepare = (sql: string) => {
      const st = db.prepare(sql);
      if (!sql.startsWith('DELETE FROM payments_settled')) return st;
      return {
        ...st,
        get: (...a: unknown[]) => {
          removals++;
          return st.get(...a);
        },
      };
    };
    const payments = new PaymentStore(counting);
    const failed = SESSIONS['a payment that failed for good']!();
    const live = {
      ...failed,
      status: 'Created' as const,
      failedError: null,
      attempts: [attempt(1, 'Inflight', 2, 1n)],
    };
    const rows = () => rowCounts(db);
    // A new payment: checked, then saved without the removal.
    expect(payments.settled(live.paymentHash)).toBeUndefined();
    payments.put(live);
    expect(removals).toBe(0);
    payments.put(failed);
    expect(rows()).toEqual({ live: 0, settled: 1 });
    // A check that found none, then the hash saved settled: the next live save removes that row.
    const again = { ...live, paymentHash: `0x${'ab'.repeat(32)}` };
    expect(payments.settled(again.paymentHash)).toBeUndefined();
    payments.put({ ...failed, paymentHash: again.paymentHash });
    payments.put(again);
    expect(removals).toBe(1);
    expect(payments.settled(again.paymentHash)).toBeUndefined();
    // A check made inside a caller's transaction that rolls back the removal counts for nothing.
    expect(() =>
      db.transaction(() => {
        payments.put(live);
        expect(payments.settled(live.paymentHash)).toBeUndefined();
        throw new Error('rolled back');
      })(),
    ).toThrow('rolled back');
    expect(payments.settled(live.paymentHash)?.status).toBe('Failed');
    payments.put(live);
    expect(payments.settled(live.paymentHash)).toBeUndefined();
    expect(rows()).toEqual({ live: 2, settled: 0 });
  });

  it('pages live and settled payments as one, in payment-hash order, by status', () => {
    const { payments } = store();
    const all: PaymentSession[] = [];
    for (let i = 0; i < 40; i++) {
      const s = Object.values(SESSIONS)[i % 5]!();
      const live = i % 3 === 0;
      const put = live ? { ...s, status: 'Inflight' as const, attempts: [attempt(1, 'Inflight', 2, 1n)] } : s;
      payments.put(put);
      all.push(put);
    }
    const sorted = [...all].sort((a, b) => (a.paymentHash < b.paymentHash ? -1 : 1));
    const pageAll = (status?: PaymentSession['status']) => {
      const out: string[] = [];
      let after: string | undefined;
      for (;;) {
        const page = payments.list({ status, limit: 7, after });
        out.push(...page.map((p) => p.paymentHash));
        if (page.length < 7) return out;
        after = page.at(-1)!.paymentHash;
      }
    };
    expect(pageAll()).toEqual(sorted.map((s) => s.paymentHash));
    for (const status of ['Inflight', 'Success', 'Failed'] as const)
      expect(pageAll(status)).toEqual(sorted.filter((s) => s.status === status).map((s) => s.paymentHash));
    // Each answers as its session would.
    for (const v of payments.list({ limit: 100 }))
      expect(paymentRecord(v, SOURCE)).toEqual(
        paymentRecord(viewOf(all.find((s) => s.paymentHash === v.paymentHash)!), SOURCE),
      );
  });

  it('indexes payments by status only where it narrows a listing (failed settled ones), and lists those by it', () => {
    const { db } = store();
    const indexes = (
      db.prepare('PRAGMA index_list(payments_settled)').all() as { name: string; partial: number }[]
    )
      .map((i) => `${i.name}${i.partial ? ' (partial)' : ''}`)
      .sort();
    expect(indexes).toEqual(['payments_settled_failed (partial)', 'sqlite_autoindex_payments_settled_1']);
    // The live sessions, few at any time, keep only their key's index.
    expect(
      (db.prepare('PRAGMA index_list(payment_sessions)').all() as { name: string }[]).map((i) => i.name),
    ).toEqual(['sqlite_autoindex_payment_sessions_1']);
    // The listing's query as the store makes it (the status written into it, not bound).
    const plan = (status: 'Success' | 'Failed') =>
      (
        db
          .prepare(
            `EXPLAIN QUERY PLAN SELECT payment_hash, status, created_at, updated_at, body FROM payments_settled WHERE status = '${status}' AND payment_hash >= ? ORDER BY payment_hash LIMIT ?`,
          )
          .all(Buffer.alloc(32), 7) as { detail: string }[]
      )
        .map((r) => r.detail)
        .join('; ');
    expect(plan('Failed')).toContain('payments_settled_failed');
    expect(plan('Success')).toContain('sqlite_autoindex_payments_settled_1');
    expect(plan('Success')).not.toContain('TEMP B-TREE');
  });

  it('counts payments by status across both tables, and follows puts', () => {
    const { db, payments } = store();
    const make = SESSIONS['an invoice paid over two hops']!;
    const a = make();
    payments.put(a);
    payments.put({ ...make(), status: 'Inflight', attempts: [attempt(1, 'Inflight', 1, 1n)] });
    expect(payments.countByStatus()).toEqual({ Success: 1, Inflight: 1 });
    payments.put(make());
    payments.put(SESSIONS['a payment that failed for good']!());
    expect(payments.countByStatus()).toEqual({ Success: 2, Failed: 1, Inflight: 1 });
    // Another store on the same database sees the same counts; a rolled-back put is not counted.
    const other = new PaymentStore(db);
    expect(() =>
      db.transaction(() => {
        other.put(make());
        throw new Error('rolled back');
      })(),
    ).toThrow('rolled back');
    expect(other.countByStatus()).toEqual({ Success: 2, Failed: 1, Inflight: 1 });
    payments.put({ ...a, status: 'Created', attempts: [] });
    expect(payments.countByStatus()).toEqual({ Success: 1, Failed: 1, Inflight: 1, Created: 1 });
  });

  it('lists for resuming only the live sessions: in flight, and trampolines not yet settled', () => {
    const { payments } = store();
    const ctx = { prevChannelId: hex(32), prevTlcId: 1n, onion: '0x00', upstreamSettled: false };
    const make = SESSIONS['an invoice paid over two hops']!;
    const tramp = make();
    const open = { ...tramp, request: { ...tramp.request, trampoline: ctx } } as PaymentSession;
    payments.put(open);
    payments.put(make());
    const inflight = { ...make(), status: 'Inflight' as const, attempts: [attempt(1, 'Inflight', 1, 1n)] };
    payments.put(inflight);
    expect(payments.unsettledTrampolines().map((s) => s.paymentHash)).toEqual([open.paymentHash]);
    expect(payments.unfinished().map((s) => s.paymentHash)).toEqual([inflight.paymentHash]);
    payments.put({
      ...open,
      request: { ...open.request, trampoline: { ...ctx, upstreamSettled: true } },
    } as PaymentSession);
    expect(payments.unsettledTrampolines()).toEqual([]);
    expect(payments.settled(open.paymentHash)?.status).toBe('Success');
  });

  it('moves the settled sessions of an older store on migration, answering the same', () => {
    const file = path.join(os.tmpdir(), `strand-settled-${process.pid}-${Date.now()}.db`);
    const v1 = { domain: 'payment', migrations: paymentSchema.migrations.slice(0, 1) };
    const old = openDatabase(file, [v1]);
    const sessions = Array.from({ length: 2_500 }, (_, i) => Object.values(SESSIONS)[i % 5]!());
    sessions.push({
      ...sessions[0]!,
      paymentHash: hex(32),
      status: 'Inflight',
      attempts: [attempt(1, 'Inflight', 1, 1n)],
    });
    const insert = old.prepare('INSERT INTO payment_sessions (payment_hash, status, body) VALUES (?, ?, ?)');
    old.transaction(() => {
      // A row that does not read back (damaged): left as it is.
      insert.run(hex(32), 'Success', '{"paymentHash": ');
      for (const s of sessions)
        insert.run(
          s.paymentHash,
          s.status,
          JSON.stringify(s, (_k, v) => (typeof v === 'bigint' ? { $big: v.toString(16) } : v)),
        );
    })();
    old.close();
    const db = openDatabase(file, [paymentSchema]);
    try {
      const payments = new PaymentStore(db);
      expect(db.prepare('SELECT COUNT(*) AS n FROM payment_sessions').get()).toEqual({ n: 2 });
      expect(db.prepare('SELECT COUNT(*) AS n FROM payments_settled').get()).toEqual({ n: 2_500 });
      for (const s of sessions)
        expect(paymentRecord(payments.view(s.paymentHash)!, SOURCE)).toEqual(
          paymentRecord(viewOf(s), SOURCE),
        );
    } finally {
      db.close();
      for (const f of [file, `${file}-wal`, `${file}-shm`]) fs.rmSync(f, { force: true });
    }
  });
});

describe('the settled table pages from the session table cursor', () => {
  // Keys of the settled table: `0x` + 64 lower-case hex; cursors may be any text.
  const key = fc
    .uint8Array({ minLength: 32, maxLength: 32 })
    .map((b) => `0x${Buffer.from(b).toString('hex')}`);
  const cursor = fc.oneof(
    key,
    key.map((k) => k.slice(0, 3 + (k.charCodeAt(5) % 60))),
    key.map((k) => k.toUpperCase().replace('0X', '0x')),
    key.map((k) => `${k}z`),
    fc.string({ maxLength: 70 }),
    fc.constantFrom('', '0', '0x', '0xg', '0y', '/', `0x${'f'.repeat(64)}`, `0x${'f'.repeat(64)}0`),
  );

  it('finds the least key after any cursor, byte by byte', () => {
    fc.assert(
      fc.property(fc.array(key, { minLength: 1, maxLength: 30 }), cursor, (keys, after) => {
        const from = settledKeyAfter(after);
        const expected = keys.filter((k) => k > after).sort();
        const got = from ? keys.filter((k) => Buffer.from(k.slice(2), 'hex').compare(from) >= 0).sort() : [];
        expect(got).toEqual(expected);
      }),
      { numRuns: 2_000 },
    );
  });
});
