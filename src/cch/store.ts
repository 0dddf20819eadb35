/**
 * Cross-chain orders in SQLite, one row per payment hash (the `cch` domain of the store). The
 * order is kept as JSON beside its status, so the hub resumes every unfinished order on start.
 */
import type { Db, DomainSchema } from '../store/index.ts';
import type { CchOrder } from './order.ts';

export const cchSchema: DomainSchema = {
  domain: 'cch',
  migrations: [
    {
      version: 1,
      up: `CREATE TABLE cch_orders (
        payment_hash TEXT PRIMARY KEY,
        status TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        body TEXT NOT NULL
      )`,
    },
  ],
};

export class CchStoreError extends Error {}

const toRow = (o: CchOrder) =>
  JSON.stringify({ ...o, amountSats: o.amountSats.toString(), feeSats: o.feeSats.toString() });

function fromRow(body: string): CchOrder {
  const o = JSON.parse(body);
  return { ...o, amountSats: BigInt(o.amountSats), feeSats: BigInt(o.feeSats) };
}

export class CchOrderStore {
  constructor(private readonly db: Db) {}

  /** fnn's `Inserting duplicated key` refusal: one order per payment hash, ever. */
  insert(order: CchOrder): void {
    const r = this.db
      .prepare(
        'INSERT INTO cch_orders (payment_hash, status, created_at, body) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING',
      )
      .run(order.paymentHash, order.status, order.createdAt, toRow(order));
    if (r.changes === 0)
      throw new CchStoreError(`Store error: Inserting duplicated key: ${order.paymentHash}`);
  }

  update(order: CchOrder): void {
    this.db
      .prepare('UPDATE cch_orders SET status = ?, body = ? WHERE payment_hash = ?')
      .run(order.status, toRow(order), order.paymentHash);
  }

  get(paymentHash: string): CchOrder | undefined {
    const row = this.db.prepare('SELECT body FROM cch_orders WHERE payment_hash = ?').get(paymentHash) as
      | { body: string }
      | undefined;
    return row ? fromRow(row.body) : undefined;
  }

  /** Orders not yet Success or Failed, plus failed ones whose incoming side is not yet cancelled. */
  unfinished(): CchOrder[] {
    const rows = this.db
      .prepare("SELECT body FROM cch_orders WHERE status NOT IN ('Success') ORDER BY created_at")
      .all() as { body: string }[];
    return rows
      .map((r) => fromRow(r.body))
      .filter((o) => o.status !== 'Failed' || !(o.incomingCancelled || o.keepIncoming));
  }
}
