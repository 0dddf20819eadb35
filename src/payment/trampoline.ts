/**
 * Trampoline routing, the pure rules (`docs/reference/fiber-routing-protocol.md` §5,
 * `fiber-internals.md` §Trampoline; the reference's `find_trampoline_route` and
 * `forward_trampoline_packet`):
 * - the sender names 1..5 trampoline nodes and a fee budget (`max_fee_amount`); it routes to the
 *   first trampoline only, delivering `final amount + budget`, and the inner onion (custom record
 *   65537 of the outer final payload) tells each trampoline where to pay next, how much
 *   (`amount_to_forward`) and with what budget (`build_max_fee_amount`, the budget split evenly);
 * - each hop's expiry delta is the final delta plus 4 h per trampoline after it;
 * - a trampoline accepts only an incoming amount exceeding `amount_to_forward` by exactly its
 *   budget, then pays the next node itself, within that budget (less its own fee on its first
 *   channel);
 * - when that payment fails, the incoming TLC fails with the session's `last_error_code` (or
 *   TemporaryNodeFailure) and no erring node: the sender cannot tell where past the trampoline it
 *   failed, so it stops (the reference's `record_payment_fail` on a node outside the route);
 * - MPP: the sender pays the trampoline in one part and tells it `max_parts`; the trampoline
 *   splits its own payment to the next node, each part carrying the inner onion, and the final
 *   node gathers the parts by the MPP record of the inner Final payload. A trampoline takes one
 *   incoming TLC per payment (the reference's "single previous tlc"): parts of a trampoline payment
 *   are not gathered, and one paying less than the amount and budget is refused.
 */

import { hexToBytes } from '../codec/index.ts';
import { DEFAULT_TLC_EXPIRY_DELTA } from '../graph/index.ts';
import { SendPaymentError } from './errors.ts';
// A cycle (request.ts checks trampoline_hops here), harmless: only used inside functions.
import { MAX_TLC_EXPIRY_LIMIT, MIN_TLC_EXPIRY_DELTA } from './expiry-limits.ts';
import { MAX_PARTS_LIMIT } from './mpp.ts';
import type { HashAlgorithm } from './onion/hop-data.ts';
import { TLC_ERROR_CODES, type TlcErrorCodeName } from './onion/tlc-error.ts';
import {
  buildTrampolineOnion,
  type TrampolineForwardPayload,
  type TrampolineHopPayload,
} from './onion/trampoline.ts';
import type { PaymentSession } from './session.ts';

export const MAX_TRAMPOLINE_HOPS = 5;
/** The fee rate (ppm) the reference assumes per trampoline when it estimates the budget. */
export const TRAMPOLINE_DEFAULT_FEE_RATE = 1000n;
/** The reference's text when a trampoline's own fee on its first channel exceeds its budget. */
export const TRAMPOLINE_FEE_INSUFFICIENT = 'Send payment error: Trampoline forwarding fee insufficient';
/** The reference's text when the route's fees exceed what the budget has left. */
export const FEE_TOO_LOW_FOR_ROUTE = 'Send payment error: max_fee_amount is too low for selected route';

/** A failure to plan the route, as the reference's `PathFindError::Other` (its text). */
export class TrampolinePlanError extends Error {}

/**
 * Where a trampoline-forwarded payment comes from: the TLC it pays for, and the rest of the inner
 * onion to hand the next node. Stored with the trampoline's own payment session.
 */
export interface TrampolineContext {
  /** The inner onion for the next node (hex). */
  onion: string;
  prevChannelId: string;
  prevTlcId: bigint;
  /** Hex; encrypts the failure sent back for the incoming TLC. */
  sharedSecret: string;
  /** The incoming TLC was settled after the session ended. */
  upstreamSettled: boolean;
}

const feeAt = (amount: bigint, ppm: bigint) => (amount * ppm + 999_999n) / 1_000_000n;

/** The reference's `estimate_trampoline_fee`: each hop at the default rate × `factor`, backwards. */
export function estimateTrampolineFee(finalAmount: bigint, hops: number, factor = 1n): bigint {
  let amount = finalAmount;
  for (let i = 0; i < hops; i++) amount += feeAt(amount, TRAMPOLINE_DEFAULT_FEE_RATE) * factor;
  return amount - finalAmount;
}

/** Final delta plus 4 h per trampoline still to come; never above the limit. */
export function trampolineExpiryDelta(finalDelta: bigint, trampolinesAfter: number, limit: bigint): bigint {
  const total = finalDelta + BigInt(DEFAULT_TLC_EXPIRY_DELTA) * BigInt(trampolinesAfter);
  if (total > limit)
    throw new TrampolinePlanError(
      `trampoline tlc_expiry_delta exceeds tlc_expiry_limit: ${total} > ${limit}`,
    );
  return total;
}

/** The budget split evenly over the trampolines; the first `remainder` get one more. */
export function splitTrampolineFees(budget: bigint, hops: number): bigint[] {
  const n = BigInt(hops);
  const base = budget / n;
  const rest = Number(budget % n);
  const fees = Array.from({ length: hops }, (_, i) => base + (i < rest ? 1n : 0n));
  if (fees.includes(0n))
    throw new TrampolinePlanError(
      'max_fee_amount is too low for trampoline routing: fee for a trampoline hop is zero',
    );
  return fees;
}

export interface TrampolinePlanInput {
  hops: string[];
  target: string;
  finalAmount: bigint;
  maxFeeAmount: bigint;
  finalTlcExpiryDelta: bigint;
  tlcExpiryLimit: bigint;
  hashAlgorithm: HashAlgorithm;
  paymentPreimage: Uint8Array | null;
  customRecords: Map<number, Uint8Array> | null;
  /** Told to each trampoline when the payment may be split there (an MPP invoice), else null. */
  maxParts?: bigint | null;
}

export interface TrampolinePlan {
  /** What the outer route must deliver to the first trampoline. */
  amountToFirst: bigint;
  /** The expiry delta of the outer route's final payload. */
  outerFinalDelta: bigint;
  payloads: TrampolineHopPayload[];
}

/** Payloads for the trampolines and the target, after the reference's budget guard. */
export function planTrampoline(p: TrampolinePlanInput): TrampolinePlan {
  const n = p.hops.length;
  const low = estimateTrampolineFee(p.finalAmount, n);
  if (p.maxFeeAmount < low) {
    const high = estimateTrampolineFee(p.finalAmount, n, 10n);
    throw new TrampolinePlanError(
      `max_fee_amount is too low for trampoline routing: recommend_minimal_fee=${low}, maximal_fee=${high} current_fee=${p.maxFeeAmount}`,
    );
  }
  // The reference's `first_hop_fee` is always 0: the whole budget goes to the trampolines.
  const fees = splitTrampolineFees(p.maxFeeAmount, n);
  const payloads: TrampolineHopPayload[] = p.hops.map(
    (_, i): TrampolineForwardPayload => ({
      type: 'Forward',
      nextNodeId: hexToBytes(i + 1 < n ? p.hops[i + 1]! : p.target, 'next_node_id', 33),
      amountToForward: p.finalAmount + fees.slice(i + 1).reduce((a, b) => a + b, 0n),
      hashAlgorithm: p.hashAlgorithm,
      buildMaxFeeAmount: fees[i]!,
      tlcExpiryDelta: trampolineExpiryDelta(p.finalTlcExpiryDelta, n - i - 1, p.tlcExpiryLimit),
      tlcExpiryLimit: p.tlcExpiryLimit,
      maxParts: p.maxParts ?? null,
    }),
  );
  payloads.push({
    type: 'Final',
    finalAmount: p.finalAmount,
    finalTlcExpiryDelta: p.finalTlcExpiryDelta,
    paymentPreimage: p.paymentPreimage,
    customRecords: p.customRecords,
  });
  return {
    amountToFirst: p.finalAmount + p.maxFeeAmount,
    outerFinalDelta: trampolineExpiryDelta(p.finalTlcExpiryDelta, n, p.tlcExpiryLimit),
    payloads,
  };
}

/** The inner onion over the trampolines then the target (a fresh session key each time). */
export function trampolineOnion(p: TrampolinePlanInput, plan: TrampolinePlan, paymentHash: Uint8Array) {
  const path = [...p.hops, p.target].map((h) => hexToBytes(h, 'trampoline hop', 33));
  return buildTrampolineOnion(path, plan.payloads, paymentHash).packet;
}

/**
 * At a trampoline: what the incoming amount must be for a Forward payload — more than
 * `amount_to_forward`, by exactly `build_max_fee_amount`. Null when it is.
 */
export function checkTrampolineForward(
  incomingAmount: bigint,
  f: TrampolineForwardPayload,
): TlcErrorCodeName | null {
  if (incomingAmount <= f.amountToForward) return 'FeeInsufficient';
  if (incomingAmount - f.amountToForward !== f.buildMaxFeeAmount) return 'InvalidOnionPayload';
  return null;
}

/**
 * A trampoline's own payment: what each route (each part) leaves of the budget after this node's
 * fee on its first channel and the route's fees — the reference's `apply_trampoline_forwarding_fee`
 * then its fee check. Throws the reference's texts when the budget does not cover them.
 */
export function trampolineBudgetLeft(budget: bigint, localFee: bigint, routeFee: bigint): bigint {
  if (localFee > budget) throw new TrampolineBudgetError(TRAMPOLINE_FEE_INSUFFICIENT);
  if (routeFee > budget - localFee) throw new TrampolineBudgetError(FEE_TOO_LOW_FOR_ROUTE);
  return budget - localFee - routeFee;
}

/** This node's fee (ppm `rate`, rounded up) on `amount` leaving over its first channel. */
export function localForwardingFee(amount: bigint, rate: bigint): bigint {
  return feeAt(amount, rate);
}

/** A trampoline's budget does not cover its route (message: the reference's text). */
export class TrampolineBudgetError extends SendPaymentError {}

/**
 * The session's `last_error_code` as the reference keeps it: the code of a failure no route could
 * fix, or FeeInsufficient when a trampoline's budget did not cover its own fee; null otherwise.
 */
export function lastErrorCodeOf(
  s: Pick<PaymentSession, 'lastErrorCode' | 'failedError'>,
): TlcErrorCodeName | null {
  const code = s.lastErrorCode;
  if (code && code in TLC_ERROR_CODES) return code as TlcErrorCodeName;
  return s.failedError === TRAMPOLINE_FEE_INSUFFICIENT ? 'FeeInsufficient' : null;
}

/**
 * The code a trampoline fails its incoming TLC with once its own payment failed (the reference's
 * `on_payment_actor_stopped`): the session's last error code, else TemporaryNodeFailure (no
 * route, every route failed, out of tries).
 */
export function trampolineFailureCode(
  s: Pick<PaymentSession, 'lastErrorCode' | 'failedError'>,
): TlcErrorCodeName {
  return lastErrorCodeOf(s) ?? 'TemporaryNodeFailure';
}

/**
 * At a trampoline, after the amount checks: whether the Forward payload makes a payment request
 * the reference's builder accepts (`SendPaymentDataBuilder::build`, whose refusal is a
 * TemporaryNodeFailure): a positive amount, the expiry delta and limit in range, 1..24 parts.
 */
export function trampolineForwardAcceptable(
  f: TrampolineForwardPayload,
  minDelta: bigint = MIN_TLC_EXPIRY_DELTA,
): boolean {
  const delta = f.tlcExpiryDelta;
  const limit = f.tlcExpiryLimit;
  return (
    f.amountToForward > 0n &&
    delta >= minDelta &&
    delta <= MAX_TLC_EXPIRY_LIMIT &&
    limit >= delta &&
    limit <= MAX_TLC_EXPIRY_LIMIT &&
    (f.maxParts === null || (f.maxParts >= 1n && f.maxParts <= MAX_PARTS_LIMIT))
  );
}

/**
 * At the final node: the outer payload's amount is the TLC's, and no more than the final amount
 * the sender put in the inner onion.
 */
export function checkTrampolineFinal(tlcAmount: bigint, outerAmount: bigint, finalAmount: bigint): boolean {
  return outerAmount === tlcAmount && outerAmount <= finalAmount;
}

/**
 * Whether a node's announced features include TRAMPOLINE_ROUTING (bit 4 required or 5 optional);
 * a node that announced nothing counts as supporting it, as in the reference.
 */
export function supportsTrampolineRouting(features: Uint8Array | undefined): boolean {
  if (!features) return true;
  return ((features[0] ?? 0) & 0b11_0000) !== 0;
}

/**
 * What the sender's graph says against its `trampoline_hops` (the reference's
 * `find_trampoline_route`, a PathFindError::FeatureNotEnabled detail), or null.
 */
export function trampolineHopsUnsupported(
  hops: string[],
  source: string,
  featuresOf: (node: string) => Uint8Array | undefined,
): string | null {
  if (hops[0] === source) return 'invalid trampoline_hops: first hop must not be source/target';
  if (hops.some((h) => !supportsTrampolineRouting(featuresOf(h))))
    return 'invalid trampoline_hops: a hop does not support trampoline routing';
  return null;
}

/**
 * `trampoline_hops` of send_payment, with the reference's texts (the caller wraps them as an
 * invalid request).
 */
export function trampolineHopsProblem(o: {
  hops: string[];
  target: string;
  maxFeeAmountGiven: boolean;
  allowSelfPayment: boolean;
  mppParts: bigint | null;
}): string | null {
  const { hops } = o;
  if (hops.length === 0) return 'trampoline_hops must be non-empty when provided';
  if (hops.length > MAX_TRAMPOLINE_HOPS) return `too many trampoline_hops, at most ${MAX_TRAMPOLINE_HOPS}`;
  if (o.mppParts !== null && o.mppParts > 1n && hops.length > 1)
    return 'trampoline_hops must contain only one hop when MPP is enabled';
  if (hops.includes(o.target)) return 'trampoline_hops must not contain target_pubkey';
  if (!o.maxFeeAmountGiven) return 'max_fee_amount must be set when trampoline_hops is provided';
  if (new Set(hops).size !== hops.length) return 'trampoline_hops must not contain duplicates';
  if (o.allowSelfPayment) return 'allow_self_payment cannot be enabled with trampoline routing';
  return null;
}
