/**
 * Fills a node's store as a long-lived node's would be, for `bench:store`: channels cloned from a
 * real channel state and settled payments cloned from real ones, each with fresh hashes,
 * preimages, keys and ids of the real sizes, written through the stores' own modules
 * (`ChannelStore`, `PaymentStore`, the invoice tables) — what a settled payment leaves behind on
 * each side:
 *
 * - payer: its payment session, ended Success (the route's first hop over one of its channels);
 * - forwarder: the preimage it learned while forwarding;
 * - payee: the preimage, and for an invoice payment the invoice, marked Paid with the amount.
 *
 * TLC links, outcomes and onions are gone once a payment settles; the payment history keeps one
 * row per channel pair, not per payment.
 */
import { randomBytes } from 'node:crypto';
import { type Channel, ChannelStore } from '../src/channel/index.ts';
import { bytesToHex } from '../src/codec/index.ts';
import { publicKeyOf } from '../src/crypto/index.ts';
import { encodeInvoice } from '../src/invoice/codec.ts';
import { decodeInvoice } from '../src/invoice/index.ts';
import { invoiceTables } from '../src/invoice/store.ts';
import { PaymentStore } from '../src/payment/index.ts';
import { DEFAULT_FINAL_TLC_EXPIRY_DELTA } from '../src/payment/request.ts';
import { type PaymentSession, SINGLE_PATH_TRY_LIMIT } from '../src/payment/session.ts';
import type { SettledPayment } from '../src/payment/settled.ts';
import type { Db } from '../src/store/index.ts';

/** Rows written per transaction (one commit each). */
const BATCH = 5_000;

const hex = (n: number, prefix = true) => bytesToHex(randomBytes(n), prefix);

/** One of our channels, as a route's first hop names it. */
export interface OwnChannel {
  peer: string;
  outpoint: string;
}

/** Row count of every table of the store. */
export function rowCounts(db: Db): Map<string, number> {
  const tables = db
    .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
    .all() as { name: string }[];
  return new Map(
    tables.map(({ name }) => [
      name,
      (db.prepare(`SELECT COUNT(*) AS n FROM "${name}"`).get() as { n: number }).n,
    ]),
  );
}

/**
 * The session a settled payment was, as it stood when it ended (the store keeps only the settled
 * part of it): its request with `send_payment`'s defaults, one attempt per route with the onion's
 * shared secrets and key.
 */
export function sessionOf(p: SettledPayment): PaymentSession {
  return {
    paymentHash: p.paymentHash,
    status: p.status,
    createdAt: p.createdAt,
    lastUpdatedAt: p.lastUpdatedAt,
    failedError: p.failedError,
    fee: p.fee,
    request: {
      targetPubkey: p.targetPubkey,
      amount: p.amount,
      paymentHash: p.paymentHash,
      preimage: p.invoice ? null : p.preimage,
      finalTlcExpiryDelta: DEFAULT_FINAL_TLC_EXPIRY_DELTA,
      tlcExpiryLimit: 1_209_600_000n,
      maxFeeAmount: p.amount / 200n,
      maxParts: 12n,
      allowMpp: false,
      keysend: !p.invoice,
      udtTypeScript: p.udtTypeScript,
      allowSelfPayment: false,
      customRecords: p.customRecords,
      hopHints: [],
      hashAlgorithm: 'ckb_hash',
      invoice: p.invoice,
      dryRun: false,
      timeout: null,
      trampolineHops: null,
    },
    attempts: p.routes.map((route, i) => ({
      id: hex(16, false),
      n: i + 1,
      status: 'Success' as const,
      route,
      fee: p.fee,
      sharedSecrets: route.map(() => hex(32)),
      error: null,
      onionKey: `02${hex(32, false)}`,
    })),
    tryLimit: SINGLE_PATH_TRY_LIMIT,
    preimage: p.preimage,
  };
}

/** `n` channels like `template` (same state, balances and size), each with its own ids and peer. */
export function fillChannels(db: Db, template: Channel, n: number): OwnChannel[] {
  const store = new ChannelStore(db);
  const out: OwnChannel[] = [];
  for (let i = 0; i < n; i += BATCH) {
    const batch: Channel[] = [];
    for (let j = i; j < Math.min(n, i + BATCH); j++) {
      const ch = structuredClone(template);
      ch.tempId = hex(32);
      ch.id = hex(32);
      ch.peer = bytesToHex(publicKeyOf(randomBytes(32)), false);
      ch.seed = hex(32);
      ch.createdAt = template.createdAt - (n - j) * 60_000;
      if (ch.fundingTxHash) ch.fundingTxHash = hex(32);
      if (ch.latestCommitmentTxHash) ch.latestCommitmentTxHash = hex(32);
      batch.push(ch);
      if (ch.fundingTxHash) out.push({ peer: ch.peer, outpoint: `${ch.fundingTxHash}00000000` });
    }
    store.saveAll(batch, () => {});
  }
  return out;
}

/**
 * `n` settled payments like `templates` (taken in turn: keysend and invoice payments as the seed
 * made them), each over one of `channels` first, ended `lastUpdatedAt` − `createdAt` after it began.
 */
export function fillPayer(db: Db, templates: PaymentSession[], n: number, channels: OwnChannel[]): string[] {
  if (!templates.length) throw new Error('no payment session to copy');
  const store = new PaymentStore(db);
  const hashes: string[] = [];
  const now = Date.now();
  for (let i = 0; i < n; i += BATCH) {
    db.transaction(() => {
      for (let j = i; j < Math.min(n, i + BATCH); j++) {
        const t = templates[j % templates.length]!;
        const ch = channels[j % channels.length];
        const paymentHash = hex(32);
        const preimage = hex(32);
        const createdAt = now - (n - j) * 1_000;
        const s: PaymentSession = {
          ...t,
          paymentHash,
          preimage,
          createdAt,
          lastUpdatedAt: createdAt + (t.lastUpdatedAt - t.createdAt),
          request: {
            ...t.request,
            paymentHash,
            preimage: t.request.preimage ? preimage : null,
          },
          attempts: t.attempts.map((a) => ({
            ...a,
            id: hex(16, false),
            sharedSecrets: a.sharedSecrets.map(() => hex(32)),
            ...(a.onionKey ? { onionKey: `02${hex(32, false)}` } : {}),
            route: a.route.map((h, k) =>
              k === 0 && ch ? { ...h, target: ch.peer, channelOutpoint: ch.outpoint } : h,
            ),
          })),
        };
        store.put(s);
        hashes.push(paymentHash);
      }
    })();
  }
  return hashes;
}

/** `n` preimages learned while forwarding. */
export function fillForwarder(db: Db, n: number): string[] {
  const t = invoiceTables(db);
  const hashes: string[] = [];
  const now = Date.now();
  for (let i = 0; i < n; i += BATCH) {
    t.transaction(() => {
      for (let j = i; j < Math.min(n, i + BATCH); j++) {
        const hash = randomBytes(32);
        t.putPreimage(hash, randomBytes(32), now - (n - j) * 1_000);
        hashes.push(bytesToHex(hash));
      }
    });
  }
  return hashes;
}

/**
 * `n` payments received: one in `keysendEvery` a keysend (its preimage only), the others paid
 * invoices like `invoiceTemplate` (the issuing node's string with a fresh hash and timestamp; the
 * signature is random bytes of the real size: stored invoices are read back trusted).
 */
export function fillPayee(
  db: Db,
  invoiceTemplate: string,
  amount: bigint,
  n: number,
  keysendEvery: number,
): { written: number; invoices: string[] } {
  const t = invoiceTables(db);
  const template = decodeInvoice(invoiceTemplate);
  const invoices: string[] = [];
  const now = Date.now();
  for (let i = 0; i < n; i += BATCH) {
    t.transaction(() => {
      for (let j = i; j < Math.min(n, i + BATCH); j++) {
        const hash = randomBytes(32);
        const at = now - (n - j) * 1_000;
        if (keysendEvery > 0 && j % keysendEvery === 0) {
          t.putPreimage(hash, randomBytes(32), at);
        } else {
          const invoice = encodeInvoice({
            ...template,
            data: { ...template.data, paymentHash: hash, timestamp: BigInt(at) },
            signature: randomBytes(65),
          });
          t.insert(hash, invoice, at);
          t.putPreimage(hash, randomBytes(32), at);
          t.setStatus(hash, 'Paid', at + 300, amount);
          invoices.push(bytesToHex(hash));
        }
      }
    });
  }
  return { written: n, invoices };
}
