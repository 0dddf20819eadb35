/**
 * Payments in the store, in two tables:
 *
 * - `payment_sessions`: the sessions that may still change, one row per payment hash (the session
 *   as JSON, bigints as hex strings) with its status for filtering — few rows at any time;
 * - `payments_settled`: every settled payment (`settled.ts`), one compact row each (the hash as
 *   32 bytes, status and times as columns, the rest a binary body of a few hundred bytes) — the
 *   table that grows with the payment count, and that nothing reads whole: a lookup or a page is
 *   an index range, and starting the node reads none of it.
 *
 * A session moves to `payments_settled` in the transaction that saves it settled; a new session
 * for the hash of a settled Failed payment (sent again) takes it back. `list` pages both in
 * payment-hash order, as the reference's store key order does.
 */
import type { Db, DomainSchema } from '../store/index.ts';
import type { PaymentSession, PaymentStatus } from './session.ts';
import {
  decodeSettled,
  encodeSettled,
  type PaymentView,
  type SettledPayment,
  settledOf,
  viewOf,
} from './settled.ts';

/** Sessions moved to `payments_settled` per statement batch by the migration. */
const MIGRATION_BATCH = 1_000;

export const paymentSchema: DomainSchema = {
  domain: 'payment',
  migrations: [
    {
      version: 1,
      up: `CREATE TABLE payment_sessions (
             payment_hash TEXT PRIMARY KEY,
             status TEXT NOT NULL,
             body TEXT NOT NULL
           );
           CREATE INDEX payment_sessions_status ON payment_sessions (status, payment_hash);`,
    },
    {
      // Settled payments in their compact form; those of older stores move there now.
      version: 2,
      up: (db) => {
        db.exec(`CREATE TABLE payments_settled (
                   payment_hash BLOB PRIMARY KEY,
                   status TEXT NOT NULL,
                   created_at INTEGER NOT NULL,
                   updated_at INTEGER NOT NULL,
                   body BLOB NOT NULL
                 );
                 CREATE INDEX payments_settled_status ON payments_settled (status, payment_hash);`);
        settleStoredSessions(db);
      },
    },
    {
      // Settled payments are indexed by status only where that narrows a listing: the failed
      // ones. A listing of successes walks the key order (nearly every row is one). An index on
      // (status, payment_hash) took a random leaf page for every settled payment: at the payer
      // under load a sixth of the pages the WAL took, written again by each checkpoint.
      version: 3,
      up: `DROP INDEX payments_settled_status;
           CREATE INDEX payments_settled_failed ON payments_settled (payment_hash) WHERE status = 'Failed';`,
    },
    {
      // The live sessions are few (those not settled yet): a listing or a count by status reads
      // them all faster than an index on status costs to keep, two index writes a payment as its
      // session goes Created, Inflight and then out.
      version: 4,
      up: 'DROP INDEX payment_sessions_status;',
    },
  ],
};

function encode(s: PaymentSession): string {
  return JSON.stringify(s, (_k, v) => (typeof v === 'bigint' ? { $big: v.toString(16) } : v));
}

/**
 * The session's JSON read back: plain `JSON.parse`, then one walk turning `{ "$big": "<hex>" }`
 * into bigints (a reviver, called for every value, takes three times as long).
 */
function decode(text: string): PaymentSession {
  return bigints(JSON.parse(text)) as PaymentSession;
}

function bigints(v: unknown): unknown {
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) v[i] = bigints(v[i]);
    return v;
  }
  const o = v as Record<string, unknown>;
  if (typeof o.$big === 'string' && Object.keys(o).length === 1) return BigInt(`0x${o.$big}`);
  for (const k in o) {
    const x = o[k];
    if (x !== null && typeof x === 'object') o[k] = bigints(x);
  }
  return o;
}

/**
 * A payment hash as the settled table keys it (32 bytes); undefined for any other text, upper-case
 * hex included (hashes are kept lower-case: one text, one key).
 */
function hashKey(hash: string): Buffer | undefined {
  return /^0x[0-9a-f]{64}$/.test(hash) ? Buffer.from(hash.slice(2), 'hex') : undefined;
}

const HEX_CHARS = '0123456789abcdef';

/** The characters a settled key's text (`0x` + 64 lower-case hex) may have at `i`. */
const keyChars = (i: number) => (i === 0 ? '0' : i === 1 ? 'x' : HEX_CHARS);

/** The least settled key whose text starts with `prefix` (a valid start). */
function leastKey(prefix: string): Buffer {
  let text = prefix;
  for (let k = prefix.length; k < 66; k++) text += keyChars(k)[0];
  return Buffer.from(text.slice(2), 'hex');
}

/**
 * The least key of the settled table whose text sorts after `after` byte by byte (as the session
 * table's text keys do), so that both tables page from the same cursor; null when none does.
 */
export function settledKeyAfter(after: string): Buffer | null {
  // The longest start of `after` that starts some key.
  let i = 0;
  while (i < 66 && i < after.length && keyChars(i).includes(after[i]!)) i++;
  if (i < 66) {
    // `after` is a start of keys: the least key with it is longer, so after it.
    if (i === after.length) return leastKey(after);
    const bigger = [...keyChars(i)].find((c) => c > after[i]!);
    if (bigger) return leastKey(after.slice(0, i) + bigger);
  }
  // Every key starting with after[0, i) sorts before it: the next start up.
  for (let j = i - 1; j >= 0; j--) {
    const chars = keyChars(j);
    const next = chars[chars.indexOf(after[j]!) + 1];
    if (next) return leastKey(after.slice(0, j) + next);
  }
  return null;
}

interface SettledRow {
  payment_hash: Buffer;
  status: string;
  created_at: number;
  updated_at: number;
  body: Buffer;
}

function settledFromRow(r: SettledRow): SettledPayment {
  return decodeSettled(
    {
      paymentHash: `0x${Buffer.from(r.payment_hash).toString('hex')}`,
      status: r.status,
      createdAt: Number(r.created_at),
      lastUpdatedAt: Number(r.updated_at),
    },
    new Uint8Array(r.body),
  );
}

/**
 * The live sessions as committed, per database connection (every PaymentStore on the same `Db`
 * shares it): a payment reads its session back and saves it again at each step, and the read was
 * a query and a JSON parse. Filled by saves and reads outside a caller's transaction (one that
 * may still roll back drops the entry instead); a session leaves it when it settles. Sessions are
 * values: nobody mutates one read from here. Bounded: cleared past `LIVE_CACHE_MAX`.
 */
const liveCaches = new WeakMap<Db, Map<string, PaymentSession>>();
const LIVE_CACHE_MAX = 10_000;

/**
 * Payment hashes just looked up in `payments_settled` and not found there, per database
 * connection: a new payment's duplicate check (`settled`) reads the table, and its first save then
 * needs no DELETE of a settled row (at the payer under load, a random B-tree descent a payment,
 * ~12 µs). Taken by that save; forgotten by any save of the hash as settled; filled only outside a
 * caller's transaction (which could roll back the row's removal). Bounded as the live cache.
 */
const notSettledCaches = new WeakMap<Db, Set<string>>();

/** Counts of settled payments by status, kept per database once counted (metrics). */
const settledCounts = new WeakMap<Db, Map<string, number>>();

export class PaymentStore {
  private readonly putLive;
  private readonly getLive;
  private readonly dropLive;
  private readonly putSettled;
  private readonly getSettled;
  private readonly dropSettled;

  private readonly live: Map<string, PaymentSession>;
  private readonly notSettled: Set<string>;

  constructor(private readonly db: Db) {
    let live = liveCaches.get(db);
    if (!live) {
      live = new Map();
      liveCaches.set(db, live);
    }
    this.live = live;
    let notSettled = notSettledCaches.get(db);
    if (!notSettled) {
      notSettled = new Set();
      notSettledCaches.set(db, notSettled);
    }
    this.notSettled = notSettled;
    this.putLive = db.prepare(
      'INSERT INTO payment_sessions (payment_hash, status, body) VALUES (?, ?, ?) ' +
        'ON CONFLICT(payment_hash) DO UPDATE SET status = excluded.status, body = excluded.body',
    );
    this.getLive = db.prepare('SELECT body FROM payment_sessions WHERE payment_hash = ?');
    this.dropLive = db.prepare('DELETE FROM payment_sessions WHERE payment_hash = ?');
    this.putSettled = db.prepare(
      'INSERT INTO payments_settled (payment_hash, status, created_at, updated_at, body) VALUES (?, ?, ?, ?, ?) ' +
        'ON CONFLICT(payment_hash) DO UPDATE SET status = excluded.status, created_at = excluded.created_at, ' +
        'updated_at = excluded.updated_at, body = excluded.body',
    );
    this.getSettled = db.prepare(
      'SELECT payment_hash, status, created_at, updated_at, body FROM payments_settled WHERE payment_hash = ?',
    );
    this.dropSettled = db.prepare('DELETE FROM payments_settled WHERE payment_hash = ? RETURNING status');
  }

  /**
   * Saves the session: settled (`settledOf`), in its compact form in place of the session;
   * otherwise whole, in place of any settled payment of the hash (a Failed one sent again).
   */
  put(s: PaymentSession): void {
    const settled = settledOf(s);
    const key = hashKey(s.paymentHash);
    let dropped: string | undefined;
    // A live session of the hash means no settled one: saving it live took that one out. Nor is
    // there one when the duplicate check has just looked.
    const checked = this.notSettled.delete(s.paymentHash);
    const noSettledRow = checked || this.live.has(s.paymentHash);
    this.db.transaction(() => {
      dropped =
        key && !noSettledRow
          ? (this.dropSettled.get(key) as { status: string } | undefined)?.status
          : undefined;
      if (settled && key) {
        this.dropLive.run(s.paymentHash);
        this.putSettled.run(
          key,
          settled.status,
          settled.createdAt,
          settled.lastUpdatedAt,
          encodeSettled(settled),
        );
      } else {
        this.putLive.run(s.paymentHash, s.status, encode(s));
      }
    })();
    this.remember(s.paymentHash, settled && key ? undefined : s);
    const counts = settledCounts.get(this.db);
    if (!counts) return;
    // Inside a caller's transaction (which may roll back) the counts are dropped, to count again.
    if (this.db.inTransaction) {
      settledCounts.delete(this.db);
      return;
    }
    if (dropped) counts.set(dropped, (counts.get(dropped) ?? 0) - 1);
    if (settled && key) counts.set(settled.status, (counts.get(settled.status) ?? 0) + 1);
  }

  /** The session of a payment that may still change; undefined once settled (see `settled`). */
  get(paymentHash: string): PaymentSession | undefined {
    const hit = this.live.get(paymentHash);
    if (hit) return hit;
    const row = this.getLive.get(paymentHash) as { body: string } | undefined;
    const s = row ? decode(row.body) : undefined;
    if (s) this.remember(paymentHash, s);
    return s;
  }

  /** The cache follows what is committed: `s` (or no live session) for the hash. */
  private remember(paymentHash: string, s: PaymentSession | undefined): void {
    if (!s || this.db.inTransaction) {
      this.live.delete(paymentHash);
      return;
    }
    if (this.live.size >= LIVE_CACHE_MAX && !this.live.has(paymentHash)) this.live.clear();
    this.live.set(paymentHash, s);
  }

  /** A settled payment. */
  settled(paymentHash: string): SettledPayment | undefined {
    const key = hashKey(paymentHash);
    if (!key) return undefined;
    const row = this.getSettled.get(key) as SettledRow | undefined;
    if (!row && !this.db.inTransaction) {
      if (this.notSettled.size >= LIVE_CACHE_MAX) this.notSettled.clear();
      this.notSettled.add(paymentHash);
    }
    return row ? settledFromRow(row) : undefined;
  }

  /** What `get_payment` shows of the payment, live or settled. */
  view(paymentHash: string): PaymentView | undefined {
    const s = this.get(paymentHash);
    return s ? viewOf(s) : this.settled(paymentHash);
  }

  /** The preimage the payment learned (or sent, keysend), live or settled. */
  preimage(paymentHash: string): string | null | undefined {
    return (this.get(paymentHash) ?? this.settled(paymentHash))?.preimage;
  }

  /** Payments (live and settled) in payment-hash order, after `after`, of one status if given. */
  list(opts: { status?: PaymentStatus; limit: number; after?: string }): PaymentView[] {
    const live = this.listLive(opts).map((s) => viewOf(s));
    const settled =
      opts.status === undefined || opts.status === 'Success' || opts.status === 'Failed'
        ? this.listSettled(opts)
        : [];
    const out: PaymentView[] = [];
    let i = 0;
    let j = 0;
    while (out.length < opts.limit && (i < live.length || j < settled.length)) {
      const a = live[i];
      const b = settled[j];
      if (a && (!b || a.paymentHash < b.paymentHash)) {
        out.push(a);
        i++;
      } else {
        out.push(b as PaymentView);
        j++;
      }
    }
    return out;
  }

  private listLive(opts: { status?: PaymentStatus; limit: number; after?: string }): PaymentSession[] {
    const where: string[] = [];
    const args: unknown[] = [];
    if (opts.status) {
      where.push('status = ?');
      args.push(opts.status);
    }
    if (opts.after) {
      where.push('payment_hash > ?');
      args.push(opts.after);
    }
    const sql = `SELECT body FROM payment_sessions ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY payment_hash LIMIT ?`;
    return (this.db.prepare(sql).all(...args, opts.limit) as { body: string }[]).map((r) => decode(r.body));
  }

  private listSettled(opts: { status?: PaymentStatus; limit: number; after?: string }): SettledPayment[] {
    const where: string[] = [];
    const args: unknown[] = [];
    // A literal, not a parameter: SQLite takes the partial index of failed payments only when
    // the query names its condition as written.
    if (opts.status) where.push(opts.status === 'Failed' ? "status = 'Failed'" : "status = 'Success'");
    if (opts.after !== undefined) {
      const from = settledKeyAfter(opts.after);
      if (!from) return [];
      where.push('payment_hash >= ?');
      args.push(from);
    }
    const sql = `SELECT payment_hash, status, created_at, updated_at, body FROM payments_settled ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY payment_hash LIMIT ?`;
    return (this.db.prepare(sql).all(...args, opts.limit) as SettledRow[]).map(settledFromRow);
  }

  /** Payments by status, live and settled (the metrics' gauge). */
  countByStatus(): Record<string, number> {
    let counts = settledCounts.get(this.db);
    if (!counts) {
      // Two index counts (the key's and the failed ones'), not a pass over the rows: settled
      // payments are only ever Success or Failed.
      const count = (sql: string) => Number((this.db.prepare(sql).get() as { n: number | string }).n);
      const all = count('SELECT COUNT(*) AS n FROM payments_settled');
      const failed = count("SELECT COUNT(*) AS n FROM payments_settled WHERE status = 'Failed'");
      counts = new Map([
        ['Success', all - failed],
        ['Failed', failed],
      ]);
      if (!this.db.inTransaction) settledCounts.set(this.db, counts);
    }
    const out: Record<string, number> = {};
    for (const [status, n] of counts) if (n > 0) out[status] = n;
    const live = this.db
      .prepare('SELECT status, COUNT(*) AS n FROM payment_sessions GROUP BY status')
      .all() as { status: string; n: number | string }[];
    for (const r of live) out[r.status] = (out[r.status] ?? 0) + Number(r.n);
    return out;
  }

  /**
   * Trampoline sessions that ended with their incoming TLC not yet settled: ended sessions still
   * whole (a settled one has moved out), so this reads only the few live rows.
   */
  unsettledTrampolines(): PaymentSession[] {
    return (
      this.db
        .prepare(
          `SELECT body FROM payment_sessions WHERE status IN ('Success', 'Failed') AND body LIKE '%"upstreamSettled":false%'`,
        )
        .all() as { body: string }[]
    ).map((r) => decode(r.body));
  }

  /** Sessions that were in flight when the node stopped, to resume. */
  unfinished(): PaymentSession[] {
    return (
      this.db.prepare("SELECT body FROM payment_sessions WHERE status IN ('Created', 'Inflight')").all() as {
        body: string;
      }[]
    ).map((r) => decode(r.body));
  }
}

/**
 * Migration 2: the ended sessions of an older store that are settled move to `payments_settled`,
 * read a batch at a time in payment-hash order (never the whole table in memory), then leave
 * `payment_sessions` in one statement; the few ended but not settled (a trampoline's incoming
 * TLC not settled, an MPP part in flight) stay whole. About 90 s a million payments on SQLite.
 */
function settleStoredSessions(db: Db): void {
  const page = db.prepare(
    "SELECT payment_hash, status, body FROM payment_sessions WHERE status IN ('Success', 'Failed') AND payment_hash > ? ORDER BY payment_hash LIMIT ?",
  );
  const insert = db.prepare(
    'INSERT INTO payments_settled (payment_hash, status, created_at, updated_at, body) VALUES (?, ?, ?, ?, ?)',
  );
  const kept: { payment_hash: string; status: string; body: string }[] = [];
  let after = '';
  for (;;) {
    const rows = page.all(after, MIGRATION_BATCH) as { payment_hash: string; status: string; body: string }[];
    for (const r of rows) {
      // A row that does not read back stays as it is, as it would have without the migration.
      let s: PaymentSession | undefined;
      try {
        s = decode(r.body);
      } catch {
        s = undefined;
      }
      const settled = s?.paymentHash === r.payment_hash ? settledOf(s) : undefined;
      const key = hashKey(r.payment_hash);
      if (settled && key)
        insert.run(key, settled.status, settled.createdAt, settled.lastUpdatedAt, encodeSettled(settled));
      else kept.push(r);
    }
    if (rows.length < MIGRATION_BATCH) break;
    after = rows.at(-1)!.payment_hash;
  }
  db.prepare("DELETE FROM payment_sessions WHERE status IN ('Success', 'Failed')").run();
  const restore = db.prepare('INSERT INTO payment_sessions (payment_hash, status, body) VALUES (?, ?, ?)');
  for (const r of kept) restore.run(r.payment_hash, r.status, r.body);
}
