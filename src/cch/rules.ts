/**
 * fnn v0.8's cch rules, as pure functions: what `send_btc` and `receive_btc` accept (each refusal
 * an InvalidParams naming the field, with fnn's text) and the route expiry check made when the
 * outgoing payment is sent (docs/specs/cch-expiry-dependency.md in fnn).
 */

import { bytesToHex, InvalidParams } from '../codec/index.ts';
import {
  decodeInvoice,
  expiresAtMs,
  findAttr,
  hashAlgorithmOf,
  scriptFromMolecule,
} from '../invoice/index.ts';
import { decodePayReq, LN_NETWORK_OF_CURRENCY, PayReqError } from './bolt11.ts';
import type { CchConfig } from './config.ts';
import type { CchOrder } from './order.ts';

export type Currency = 'Fibb' | 'Fibt' | 'Fibd';

export const BTC_BLOCK_SECONDS = 600;
const U128_MAX = (1n << 128n) - 1n;
const I64_MAX = (1n << 63n) - 1n;

export interface Intake {
  paymentHash: string;
  amountSats: bigint;
  feeSats: bigint;
  /** Seconds until the outgoing invoice expires: the incoming invoice expires with it. */
  expirySeconds: number;
}

/** `send_btc`: the BOLT 11 invoice the hub will pay, checked against fnn's rules. */
export function checkSendBtc(
  btcPayReq: string,
  currency: Currency,
  hubCurrency: Currency,
  config: CchConfig,
  nowS: number,
): Intake & { amountMsat: bigint } {
  if (currency !== hubCurrency)
    throw new InvalidParams(
      `currency: CKB invoice network mismatch: expected ${hubCurrency}, got ${currency}`,
    );
  const bad = (msg: string) => new InvalidParams(`btc_pay_req: ${msg}`);
  let inv: ReturnType<typeof decodePayReq>;
  try {
    inv = decodePayReq(btcPayReq);
  } catch (e) {
    throw bad(e instanceof PayReqError ? e.message : 'BTC invoice parse error');
  }
  const expected = LN_NETWORK_OF_CURRENCY[hubCurrency].name;
  if (inv.network !== expected)
    throw bad(`BTC invoice network mismatch: expected ${expected}, got ${inv.network}`);
  if (inv.minFinalCltvExpiryDelta * BTC_BLOCK_SECONDS >= config.ckbFinalTlcExpiryDeltaSeconds / 2)
    throw bad('BTC invoice final TLC expiry delta exceeds safe limit for cross-chain swap');
  if (inv.expiresAt <= nowS) throw bad('BTC invoice expired');
  const expirySeconds = inv.expiresAt - nowS;
  if (expirySeconds < config.minOutgoingInvoiceExpiryDeltaSeconds)
    throw bad('Outgoing invoice expiry time is too short');
  if (inv.amountMsat === undefined || inv.amountMsat === 0n) throw bad('BTC invoice missing amount');
  const feeSats = (inv.amountMsat * config.feeRatePerMillionSats) / 1_000_000_000n + config.baseFeeSats;
  const amountSats = (inv.amountMsat + 999n) / 1000n + feeSats;
  if (amountSats > U128_MAX) throw bad('SendBTC order payment amount is too large');
  return { paymentHash: inv.paymentHash, amountSats, feeSats, expirySeconds, amountMsat: inv.amountMsat };
}

/** `receive_btc`: the user's Fiber invoice the hub will pay, checked against fnn's rules. */
export function checkReceiveBtc(
  fiberPayReq: string,
  hubCurrency: Currency,
  config: CchConfig,
  nowS: number,
): Intake & { totalMsat: bigint } {
  const bad = (msg: string) => new InvalidParams(`fiber_pay_req: ${msg}`);
  let inv: ReturnType<typeof decodeInvoice>;
  try {
    inv = decodeInvoice(fiberPayReq);
  } catch (e) {
    throw bad(`CKB invoice error: ${(e as Error).message}`);
  }
  if (inv.currency !== hubCurrency)
    throw bad(`CKB invoice network mismatch: expected ${hubCurrency}, got ${inv.currency}`);
  const paymentHash = bytesToHex(inv.data.paymentHash);
  if (inv.amount === undefined || inv.amount === 0n) throw bad('CKB invoice missing amount');
  const amountSats = inv.amount;
  const feeSats = (amountSats * config.feeRatePerMillionSats) / 1_000_000n + config.baseFeeSats;
  const totalMsat = (amountSats + feeSats) * 1000n;
  if (totalMsat > I64_MAX) throw bad('ReceiveBTC order payment amount is too large');
  const finalMs = findAttr(inv, 'FinalHtlcMinimumExpiryDelta')?.value ?? 0n;
  if (finalMs >= (BigInt(config.btcFinalTlcExpiryDeltaBlocks) * BigInt(BTC_BLOCK_SECONDS) * 1000n) / 2n)
    throw bad('CKB invoice final TLC expiry delta exceeds safe limit for cross-chain swap');
  const expiresMs = expiresAtMs(inv);
  const expirySeconds =
    expiresMs === undefined
      ? config.minOutgoingInvoiceExpiryDeltaSeconds * 2
      : Number(expiresMs / 1000n) - nowS;
  if (expirySeconds < config.minOutgoingInvoiceExpiryDeltaSeconds)
    throw bad('Outgoing invoice expiry time is too short');
  const udt = findAttr(inv, 'UdtScript');
  const script = udt ? scriptFromMolecule(udt.script) : undefined;
  const want = config.wrappedBtcTypeScript;
  if (
    !script ||
    script.code_hash !== want.code_hash.toLowerCase() ||
    script.hash_type !== want.hash_type ||
    script.args !== want.args.toLowerCase()
  )
    throw bad('Wrapped BTC type script mismatch');
  if (hashAlgorithmOf(inv) !== 'sha256')
    throw bad('CKB invoice hash algorithm is not SHA256, which is required for LND compatibility');
  return { paymentHash, amountSats, feeSats, expirySeconds, totalMsat };
}

/**
 * fnn's route expiry check: the outgoing route may take at most half of what is left of the
 * incoming TLC's time (counted from the order's creation), and no less than the outgoing
 * invoice's own final expiry delta. Seconds, or a failure reason.
 */
export function maxOutgoingSeconds(order: CchOrder, config: CchConfig, nowS: number): number | string {
  const elapsed = Math.max(0, nowS - order.createdAt);
  let incoming: number;
  let outgoingMin: number;
  if ('Fiber' in order.incomingInvoice) {
    const inv = decodeInvoice(order.incomingInvoice.Fiber, { trusted: true });
    const ms = findAttr(inv, 'FinalHtlcMinimumExpiryDelta')?.value;
    incoming = ms === undefined ? config.ckbFinalTlcExpiryDeltaSeconds : Number(ms / 1000n);
    outgoingMin = decodePayReq(order.outgoingPayReq).minFinalCltvExpiryDelta * BTC_BLOCK_SECONDS;
  } else {
    incoming = decodePayReq(order.incomingInvoice.Lightning).minFinalCltvExpiryDelta * BTC_BLOCK_SECONDS;
    const out = decodeInvoice(order.outgoingPayReq, { trusted: true });
    outgoingMin = Number((findAttr(out, 'FinalHtlcMinimumExpiryDelta')?.value ?? 0n) / 1000n);
  }
  const max = incoming > elapsed ? Math.floor((incoming - elapsed) / 2) : 0;
  if (max <= 0)
    return 'Insufficient HTLC expiry delta: incoming payment has expired or has no remaining time for outgoing payment';
  if (max < outgoingMin)
    return `Insufficient HTLC expiry delta: max outgoing route expiry (${max} seconds) is less than the outgoing invoice's minimum final expiry (${outgoingMin} seconds). Not enough time remaining on the incoming payment to safely handle outgoing payment settlement.`;
  return max;
}
