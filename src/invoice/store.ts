/**
 * SQLite tables of the invoice domain: the node's own invoices (kept as their invoice string, the
 * canonical and signed form) with their stored status, and the preimages the node knows (its own
 * invoices' and those learned while paying or forwarding). Statuses change only through
 * `status.ts`; this file just reads and writes rows.
 */
import type { Db, DomainSchema } from '../store/index.ts';
import type { InvoiceStatus } from './status.ts';

export const invoiceSchema: DomainSchema = {
  domain: 'invoice',
  migrations: [
    {
      version: 1,
      up: `
        CREATE TABLE invoices (
          payment_hash BLOB PRIMARY KEY CHECK (length(payment_hash) = 32),
          invoice TEXT NOT NULL,
          status TEXT NOT NULL CHECK (status IN ('Open', 'Cancelled', 'Expired', 'Received', 'Paid')),
          received_amount TEXT,
          created_at INTEGER NOT NULL,
          updated_at INTEGER NOT NULL
        );
        CREATE TABLE preimages (
          payment_hash BLOB PRIMARY KEY CHECK (length(payment_hash) = 32),
          preimage BLOB NOT NULL CHECK (length(preimage) = 32),
          created_at INTEGER NOT NULL
        );
      `,
    },
  ],
};

export interface InvoiceRow {
  invoice: string;
  status: InvoiceStatus;
  receivedAmount?: bigint;
}

export interface InvoiceTables {
  get(hash: Uint8Array): InvoiceRow | undefined;
  insert(hash: Uint8Array, invoice: string, now: number): boolean;
  setStatus(hash: Uint8Array, status: InvoiceStatus, now: number, receivedAmount?: bigint): void;
  getPreimage(hash: Uint8Array): Uint8Array | undefined;
  putPreimage(hash: Uint8Array, preimage: Uint8Array, now: number): void;
  removePreimage(hash: Uint8Array): void;
  transaction<T>(fn: () => T): T;
}

/** better-sqlite3 binds Buffers as BLOBs. */
function buf(b: Uint8Array): Buffer {
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength);
}

export function invoiceTables(db: Db): InvoiceTables {
  const get = db.prepare('SELECT invoice, status, received_amount FROM invoices WHERE payment_hash = ?');
  const insert = db.prepare(
    "INSERT OR IGNORE INTO invoices (payment_hash, invoice, status, created_at, updated_at) VALUES (?, ?, 'Open', ?, ?)",
  );
  const setStatus = db.prepare(
    'UPDATE invoices SET status = ?, updated_at = ?, received_amount = coalesce(?, received_amount) WHERE payment_hash = ?',
  );
  const getPreimage = db.prepare('SELECT preimage FROM preimages WHERE payment_hash = ?');
  const putPreimage = db.prepare(
    'INSERT INTO preimages (payment_hash, preimage, created_at) VALUES (?, ?, ?) ' +
      'ON CONFLICT(payment_hash) DO UPDATE SET preimage = excluded.preimage',
  );
  const removePreimage = db.prepare('DELETE FROM preimages WHERE payment_hash = ?');
  return {
    get(hash) {
      const row = get.get(buf(hash)) as
        | { invoice: string; status: InvoiceStatus; received_amount: string | null }
        | undefined;
      if (!row) return undefined;
      const out: InvoiceRow = { invoice: row.invoice, status: row.status };
      if (row.received_amount !== null) out.receivedAmount = BigInt(row.received_amount);
      return out;
    },
    insert: (hash, invoice, now) => insert.run(buf(hash), invoice, now, now).changes === 1,
    setStatus(hash, status, now, receivedAmount) {
      setStatus.run(
        status,
        now,
        receivedAmount === undefined ? null : receivedAmount.toString(10),
        buf(hash),
      );
    },
    getPreimage(hash) {
      const row = getPreimage.get(buf(hash)) as { preimage: Buffer } | undefined;
      return row ? new Uint8Array(row.preimage) : undefined;
    },
    putPreimage: (hash, preimage, now) => void putPreimage.run(buf(hash), buf(preimage), now),
    removePreimage: (hash) => void removePreimage.run(buf(hash)),
    transaction: (fn) => db.transaction(fn)(),
  };
}
