/**
 * The invoice service: creates signed invoices for this node, keeps them and their preimages in
 * SQLite, and moves their statuses through the one state machine (`status.ts`). It serves the RPC
 * module (`rpc/modules/invoice.ts`) and the payment layer (lookups by payment hash, Received /
 * Paid, preimages). Every change is committed before `onChange` reports it, with the reference's
 * store-change kinds (`PutCkbInvoiceStatus`, `PutPreimage`) for the pubsub module.
 */
import { randomBytes } from 'node:crypto';
import {
  bytesToHex,
  equalBytes,
  hexToBytes,
  MAX_TLC_EXPIRY_LIMIT,
  MIN_TLC_EXPIRY_DELTA,
} from '../codec/index.ts';
import { publicKeyOf } from '../crypto/index.ts';
import type { Db } from '../store/index.ts';
import { buildInvoice } from './builder.ts';
import { decodeInvoice, encodeInvoice, hashPreimage, signInvoice } from './codec.ts';
import { InvoiceError } from './errors.ts';
import { effectiveStatus, type InvoiceStatus, nextStatus, type StatusEvent } from './status.ts';
import { invoiceTables } from './store.ts';
import {
  type Currency,
  FEATURE_BITS,
  type HashAlgorithm,
  hashAlgorithmOf,
  type Invoice,
  type InvoiceAttr,
  isExpired,
} from './types.ts';

/**
 * Final TLC expiry delta bounds in ms: the least is 2/3 of an epoch (`codec/epoch-rules.ts`; 160 minutes
 * with the default 4-hour epoch, `minFinalExpiryDelta` otherwise), the most 14 days.
 */
export const MIN_FINAL_EXPIRY_DELTA = MIN_TLC_EXPIRY_DELTA;
export const MAX_FINAL_EXPIRY_DELTA = MAX_TLC_EXPIRY_LIMIT;

/** A 32-byte hash or preimage: bytes, or hex with or without `0x`. */
export type Hash32 = Uint8Array | string;

export type InvoiceStoreChange =
  | { PutPreimage: { payment_hash: string; payment_preimage: string } }
  | { PutCkbInvoiceStatus: { payment_hash: string; invoice_status: InvoiceStatus } };

export interface InvoiceServiceOptions {
  db: Db;
  /** The node key: invoices are signed with it and carry its public key as PayeePublicKey. */
  nodeSecretKey: Uint8Array;
  /** The node's chain: `Fibb` mainnet, `Fibt` testnet, `Fibd` anything else. */
  currency: Currency;
  /** Milliseconds since the epoch (tests pass a fake clock). */
  now?: () => number;
  /** The least `final_expiry_delta`, and its default (`minTlcExpiryDelta` of the node's epoch). */
  minFinalExpiryDelta?: bigint;
  onChange?: (change: InvoiceStoreChange) => void;
  /** Node features; both on by default, as fnn's default feature vector. */
  features?: { mpp?: boolean; trampolineRouting?: boolean };
  /**
   * Called by settle_invoice after the preimage of a Received hold invoice is stored: the payment
   * layer fulfils the held TLCs, and `markPaid` follows once a channel has removed one with the
   * preimage. Without it, settle marks Paid at once.
   */
  onSettle?: (paymentHash: Uint8Array, preimage: Uint8Array) => void;
  /** Called after cancel_invoice committed, so that the payment layer fails any held TLCs. */
  onCancel?: (paymentHash: Uint8Array) => void;
}

export interface NewInvoiceRequest {
  amount: bigint;
  currency: Currency;
  description?: string;
  paymentPreimage?: Hash32;
  paymentHash?: Hash32;
  /** Seconds from creation; absent = never expires. */
  expiry?: bigint;
  fallbackAddress?: string;
  /** Milliseconds; default 9 600 000 (160 min). */
  finalExpiryDelta?: bigint;
  /** Molecule-encoded CKB Script of the token. */
  udtTypeScript?: Uint8Array;
  hashAlgorithm?: HashAlgorithm;
  allowMpp?: boolean;
  allowTrampolineRouting?: boolean;
}

export interface StoredInvoice {
  invoiceAddress: string;
  invoice: Invoice;
  /** Effective status: a stored Open past its expiry reads as Expired. */
  status: InvoiceStatus;
  /** Set when the payment layer marked it Received. */
  receivedAmount?: bigint;
  /** Known preimage (absent for a hold invoice until settled). */
  preimage?: Uint8Array;
}

export interface InvoiceService {
  readonly currency: Currency;
  readonly payeePublicKey: Uint8Array;
  newInvoice(req: NewInvoiceRequest): { invoiceAddress: string; invoice: Invoice };
  parseInvoice(invoice: string): Invoice;
  /** Throws `invoice not found`. */
  getInvoice(paymentHash: Hash32): StoredInvoice;
  cancelInvoice(paymentHash: Hash32): StoredInvoice;
  settleInvoice(paymentHash: Hash32, preimage: Hash32): void;
  /** For the payment layer: the invoice this node issued for the hash, or undefined. */
  lookupForPayment(paymentHash: Hash32): StoredInvoice | undefined;
  /** A payment for the invoice arrived (TLCs held). Open → Received; refuses expired/cancelled/paid. */
  markReceived(paymentHash: Hash32, amount: bigint): InvoiceStatus;
  /**
   * A TLC was fulfilled. Any status → Paid. May run inside a transaction of the node's database
   * (the one saving the channel state that removed the TLC): then `onChange` reports it only
   * once that transaction has committed.
   */
  markPaid(paymentHash: Hash32): InvoiceStatus;
  getPreimage(paymentHash: Hash32): Uint8Array | undefined;
  /** Stores a preimage (learned or given); must hash to the payment hash with ckb_hash or sha256. */
  putPreimage(paymentHash: Hash32, preimage: Hash32): void;
  removePreimage(paymentHash: Hash32): void;
}

function hash32(v: Hash32, field: string): Uint8Array {
  if (typeof v === 'string') return hexToBytes(v, field, 32);
  if (v.length !== 32)
    throw new InvoiceError('InvalidParameter', `${field}: expected 32 bytes, got ${v.length}`);
  return v;
}

export function createInvoiceService(opts: InvoiceServiceOptions): InvoiceService {
  const tables = invoiceTables(opts.db);
  const now = opts.now ?? Date.now;
  const emit = opts.onChange ?? (() => {});
  const mpp = opts.features?.mpp ?? true;
  const trampoline = opts.features?.trampolineRouting ?? true;
  const payeePublicKey = publicKeyOf(opts.nodeSecretKey);

  const statusChange = (hash: Uint8Array, status: InvoiceStatus) =>
    emit({ PutCkbInvoiceStatus: { payment_hash: bytesToHex(hash), invoice_status: status } });
  const preimageChange = (hash: Uint8Array, preimage: Uint8Array) =>
    emit({ PutPreimage: { payment_hash: bytesToHex(hash), payment_preimage: bytesToHex(preimage) } });

  function load(hash: Uint8Array): StoredInvoice | undefined {
    const row = tables.get(hash);
    if (!row) return undefined;
    const invoice = decodeInvoice(row.invoice, { trusted: true });
    const out: StoredInvoice = {
      invoiceAddress: row.invoice,
      invoice,
      status: effectiveStatus(row.status, isExpired(invoice, now())),
    };
    if (row.receivedAmount !== undefined) out.receivedAmount = row.receivedAmount;
    const preimage = tables.getPreimage(hash);
    if (preimage) out.preimage = preimage;
    return out;
  }

  /**
   * Reports a status change once it is on disk: at once, or — written inside a caller's
   * transaction — after it commits (and only if it did: the status is read back).
   */
  function afterCommit(hash: Uint8Array, status: InvoiceStatus) {
    if (!opts.db.inTransaction) return statusChange(hash, status);
    queueMicrotask(() => {
      if (tables.get(hash)?.status === status) statusChange(hash, status);
    });
  }

  /** Applies one event through the state machine, in one transaction; returns the new status. */
  function apply(hash: Uint8Array, event: StatusEvent, notFound: string, receivedAmount?: bigint) {
    const result = tables.transaction(() => {
      const row = tables.get(hash);
      if (!row) throw new InvoiceError('InvoiceNotFound', notFound);
      const t = nextStatus(
        row.status,
        event,
        isExpired(decodeInvoice(row.invoice, { trusted: true }), now()),
      );
      if (!t.ok) throw new InvoiceError('StatusTransition', t.error);
      const changed = t.status !== row.status;
      if (changed || receivedAmount !== undefined) tables.setStatus(hash, t.status, now(), receivedAmount);
      return { status: t.status, changed };
    });
    if (result.changed) afterCommit(hash, result.status);
    return result.status;
  }

  function newInvoice(req: NewInvoiceRequest) {
    if (req.currency !== opts.currency) {
      throw new InvoiceError('CurrencyMismatch', `Currency must be ${opts.currency} with the chain network`);
    }
    const preimageGiven =
      req.paymentPreimage === undefined ? undefined : hash32(req.paymentPreimage, 'payment_preimage');
    const hashGiven = req.paymentHash === undefined ? undefined : hash32(req.paymentHash, 'payment_hash');
    // No preimage and no hash: a random preimage, as the reference does.
    const preimage = preimageGiven ?? (hashGiven ? undefined : new Uint8Array(randomBytes(32)));

    // Attributes in the order the reference's RPC adds them.
    const attrs: InvoiceAttr[] = [];
    if (req.description !== undefined) attrs.push({ kind: 'Description', value: req.description });
    if (req.expiry !== undefined) attrs.push({ kind: 'ExpiryTime', seconds: req.expiry });
    if (req.fallbackAddress !== undefined) attrs.push({ kind: 'FallbackAddr', value: req.fallbackAddress });
    let features: Uint8Array | undefined;
    if (req.allowMpp !== undefined) {
      features = setBit(new Uint8Array(1), FEATURE_BITS.BASIC_MPP_OPTIONAL, req.allowMpp);
      attrs.push({ kind: 'Feature', bytes: features });
      if (req.allowMpp) {
        if (!mpp)
          throw new InvoiceError('MppNotSupported', 'Node does not support MPP, please enable MPP feature');
        attrs.push({ kind: 'PaymentSecret', value: new Uint8Array(randomBytes(32)) });
      }
    }
    if (req.allowTrampolineRouting !== undefined) {
      const bit = FEATURE_BITS.TRAMPOLINE_ROUTING_OPTIONAL;
      if (features) setBit(features, bit, req.allowTrampolineRouting);
      else attrs.push({ kind: 'Feature', bytes: setBit(new Uint8Array(1), bit, req.allowTrampolineRouting) });
      if (req.allowTrampolineRouting && !trampoline) {
        throw new InvoiceError(
          'TrampolineNotSupported',
          'Node does not support trampoline routing, please enable trampoline routing feature',
        );
      }
    }
    const min = opts.minFinalExpiryDelta ?? MIN_FINAL_EXPIRY_DELTA;
    const delta = req.finalExpiryDelta ?? min;
    if (delta < min) {
      throw new InvoiceError(
        'FinalExpiryDeltaOutOfRange',
        `final_expiry_delta must be greater than or equal to ${min}`,
      );
    }
    if (delta > MAX_FINAL_EXPIRY_DELTA) {
      throw new InvoiceError(
        'FinalExpiryDeltaOutOfRange',
        `final_expiry_delta must be less than or equal to ${MAX_FINAL_EXPIRY_DELTA}`,
      );
    }
    attrs.push({ kind: 'FinalHtlcMinimumExpiryDelta', value: delta });
    if (req.udtTypeScript !== undefined) attrs.push({ kind: 'UdtScript', script: req.udtTypeScript });
    if (req.hashAlgorithm !== undefined) attrs.push({ kind: 'HashAlgorithm', value: req.hashAlgorithm });
    attrs.push({ kind: 'PayeePublicKey', pubkey: payeePublicKey });

    const unsigned = buildInvoice({
      currency: req.currency,
      amount: req.amount,
      paymentHash: hashGiven,
      paymentPreimage: preimage,
      attrs,
      timestamp: BigInt(now()),
    });
    const invoice = signInvoice(unsigned, opts.nodeSecretKey);
    const invoiceAddress = encodeInvoice(invoice);
    try {
      // What this node issues must be readable back (by itself and by payers): only a huge
      // fallback address or script can fail here (string or molecule size limits).
      decodeInvoice(invoiceAddress, { trusted: true });
    } catch (e) {
      throw new InvoiceError('EncodeFailed', `Invoice can not be encoded: ${(e as Error).message}`);
    }
    const hash = invoice.data.paymentHash;
    const inserted = tables.transaction(() => {
      if (!tables.insert(hash, invoiceAddress, now())) return false;
      if (preimage) tables.putPreimage(hash, preimage, now());
      return true;
    });
    if (!inserted) throw new InvoiceError('InvoiceExists', 'invoice already exists');
    statusChange(hash, 'Open');
    if (preimage) preimageChange(hash, preimage);
    return { invoiceAddress, invoice };
  }

  return {
    currency: opts.currency,
    payeePublicKey,
    newInvoice,
    parseInvoice: (s) => decodeInvoice(s),
    getInvoice(paymentHash) {
      const found = load(hash32(paymentHash, 'payment_hash'));
      if (!found) throw new InvoiceError('InvoiceNotFound', 'invoice not found');
      return found;
    },
    cancelInvoice(paymentHash) {
      const hash = hash32(paymentHash, 'payment_hash');
      apply(hash, 'cancel', 'invoice not found');
      opts.onCancel?.(hash);
      return load(hash)!;
    },
    settleInvoice(paymentHash, preimageIn) {
      const hash = hash32(paymentHash, 'payment_hash');
      const preimage = hash32(preimageIn, 'payment_preimage');
      const found = load(hash);
      if (!found) throw new InvoiceError('InvoiceNotFound', 'Invoice not found');
      if (!equalBytes(hashPreimage(preimage, hashAlgorithmOf(found.invoice)), hash)) {
        throw new InvoiceError('HashMismatch', 'Hash mismatch');
      }
      tables.transaction(() => {
        apply(hash, 'settle', 'Invoice not found');
        tables.putPreimage(hash, preimage, now());
      });
      preimageChange(hash, preimage);
      if (opts.onSettle) opts.onSettle(hash, preimage);
      else apply(hash, 'pay', 'Invoice not found');
    },
    lookupForPayment: (paymentHash) => load(hash32(paymentHash, 'payment_hash')),
    markReceived(paymentHash, amount) {
      return apply(hash32(paymentHash, 'payment_hash'), 'receive', 'invoice not found', amount);
    },
    markPaid: (paymentHash) => apply(hash32(paymentHash, 'payment_hash'), 'pay', 'invoice not found'),
    getPreimage: (paymentHash) => tables.getPreimage(hash32(paymentHash, 'payment_hash')),
    putPreimage(paymentHash, preimageIn) {
      const hash = hash32(paymentHash, 'payment_hash');
      const preimage = hash32(preimageIn, 'payment_preimage');
      const matches = (['ckb_hash', 'sha256'] as const).some((a) =>
        equalBytes(hashPreimage(preimage, a), hash),
      );
      if (!matches) throw new InvoiceError('WrongPreimage', 'Wrong preimage');
      tables.putPreimage(hash, preimage, now());
      preimageChange(hash, preimage);
    },
    removePreimage: (paymentHash) => tables.removePreimage(hash32(paymentHash, 'payment_hash')),
  };
}

function setBit(bytes: Uint8Array, bit: number, on: boolean): Uint8Array {
  const mask = 1 << (bit & 7);
  bytes[bit >> 3] = on ? bytes[bit >> 3] | mask : bytes[bit >> 3] & ~mask;
  return bytes;
}
