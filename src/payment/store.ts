/**
 * Payment sessions in SQLite, one row per payment hash (the session as JSON, bigints as hex
 * strings) plus its status for filtering. `list` pages in payment-hash order, as the reference's
 * store key order does.
 */
import type { Db, DomainSchema } from '../store/index.ts';
import type { PaymentSession, PaymentStatus } from './session.ts';

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
  ],
};

function encode(s: PaymentSession): string {
  return JSON.stringify(s, (_k, v) => (typeof v === 'bigint' ? { $big: v.toString(16) } : v));
}

function decode(text: string): PaymentSession {
  return JSON.parse(text, (_k, v) =>
    v && typeof v === 'object' && typeof v.$big === 'string' && Object.keys(v).length === 1
      ? BigInt(`0x${v.$big}`)
      : v,
  ) as PaymentSession;
}

export class PaymentStore {
  private readonly putStmt;
  private readonly getStmt;

  constructor(private readonly db: Db) {
    this.putStmt = db.prepare(
      'INSERT INTO payment_sessions (payment_hash, status, body) VALUES (?, ?, ?) ' +
        'ON CONFLICT(payment_hash) DO UPDATE SET status = excluded.status, body = excluded.body',
    );
    this.getStmt = db.prepare('SELECT body FROM payment_sessions WHERE payment_hash = ?');
  }

  put(s: PaymentSession): void {
    this.putStmt.run(s.paymentHash, s.status, encode(s));
  }

  get(paymentHash: string): PaymentSession | undefined {
    const row = this.getStmt.get(paymentHash) as { body: string } | undefined;
    return row ? decode(row.body) : undefined;
  }

  list(opts: { status?: PaymentStatus; limit: number; after?: string }): PaymentSession[] {
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

  /** Trampoline sessions that ended with their incoming TLC not yet settled. */
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
