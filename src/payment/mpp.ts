import { bytesToHex } from '../codec/index.ts';
import type { ChannelStats, RouterHop } from '../graph/index.ts';
import { PathFindError } from '../graph/index.ts';
import { SendPaymentError } from './errors.ts';
import { encodeMppRecord, MPP_RECORD_KEY } from './onion/hop-data.ts';
import type { PaymentRequest } from './request.ts';
import type { Attempt, PaymentSession, PaymentStatus } from './session.ts';

export const MAX_PARTS_LIMIT = 24n;
/** Tries per part in the reference (`DEFAULT_PAYMENT_MPP_ATTEMPT_TRY_LIMIT`). */
export const MPP_TRIES_PER_PART = 3;
/** How long a receiver holds the parts of an MPP payment awaiting the total (release builds). */
export const MPP_HOLD_TIMEOUT_MS = 120_000;

/** The MPP record as a `custom_records` entry (key `0x10000`), as the reference stores it. */
export function mppRecordEntry(paymentSecret: Uint8Array, totalAmount: bigint): Record<string, string> {
  return { [`0x${MPP_RECORD_KEY.toString(16)}`]: bytesToHex(encodeMppRecord(paymentSecret, totalAmount)) };
}

/**
 * The reference's `allow_mpp()`: the invoice allows it, more than one part, not keysend. A
 * payment through trampolines goes as one part here (its MPP record still names the total, and
 * the trampoline is told `max_parts`); a trampoline's own payment onward is split when the sender
 * allowed it (its request's `allowMpp` and `maxParts` come from the Forward payload).
 */
export function usesMpp(r: PaymentRequest): boolean {
  return !!r.allowMpp && r.maxParts > 1n && !r.keysend && !r.trampolineHops?.length;
}

export function mppTryLimit(maxParts: bigint): number {
  return Number(maxParts) * MPP_TRIES_PER_PART;
}

/** What the target receives from this attempt. */
export function partAmount(a: Attempt): bigint {
  return a.route.at(-1)?.amountReceived ?? 0n;
}

/** Attempts still counting towards the amount: in flight or fulfilled. */
export function activeAttempts(s: PaymentSession): Attempt[] {
  return s.attempts.filter((a) => a.status !== 'Failed');
}

function sum(xs: bigint[]): bigint {
  return xs.reduce((a, b) => a + b, 0n);
}

/** Fees of the active parts (`fee_paid`). */
export function feePaid(s: PaymentSession): bigint {
  return sum(activeAttempts(s).map((a) => a.fee));
}

/** What is left to send once the active parts arrive (`remain_amount`). */
export function remainAmount(s: PaymentSession): bigint {
  const sent = sum(activeAttempts(s).map(partAmount));
  return sent >= s.request.amount ? 0n : s.request.amount - sent;
}

export function successAmount(s: PaymentSession): bigint {
  return sum(s.attempts.filter((a) => a.status === 'Success').map(partAmount));
}

/**
 * The session's status from its parts (`calc_payment_status`): Inflight while a part is, Success
 * once the fulfilled parts cover the amount; otherwise unchanged (the caller decides on retries).
 */
export function mppStatus(s: PaymentSession): PaymentStatus {
  if (s.status === 'Success' || s.status === 'Failed') return s.status;
  if (s.attempts.some((a) => a.status === 'Inflight')) return 'Inflight';
  if (successAmount(s) >= s.request.amount) return 'Success';
  return s.status;
}

/** Whether another part may be started (`allow_more_attempts`). */
export function mayAddParts(s: PaymentSession): boolean {
  return (
    remainAmount(s) > 0n &&
    s.attempts.length < s.tryLimit &&
    activeAttempts(s).length < Number(s.request.maxParts)
  );
}

/** Amounts planned or in flight per channel direction, for the path finder. */
export class PlannedChannels implements ChannelStats {
  private readonly sent = new Map<string, bigint>();
  private readonly pending = new Map<string, number>();

  /**
   * Counts a route from `source`. `skipFirstHop`: the first hop is one of our channels whose
   * balance already excludes a TLC that was added.
   */
  add(
    source: string,
    route: Pick<RouterHop, 'target' | 'channelOutpoint' | 'amountReceived'>[],
    skipFirstHop = false,
  ): void {
    route.forEach((hop, i) => {
      if (i === 0 && skipFirstHop) return;
      const from = i === 0 ? source : route[i - 1]!.target;
      const key = `${hop.channelOutpoint}/${from}`;
      this.sent.set(key, (this.sent.get(key) ?? 0n) + hop.amountReceived);
      this.pending.set(hop.channelOutpoint, (this.pending.get(hop.channelOutpoint) ?? 0) + 1);
    });
  }

  sentAmount(outpoint: string, from: string): bigint {
    return this.sent.get(`${outpoint}/${from}`) ?? 0n;
  }

  pendingCount(outpoint: string): number {
    return this.pending.get(outpoint) ?? 0;
  }
}

/** Route searches for one payment, with the channels already used counted in `stats`. */
export interface PartRouter {
  /** The amount the widest route carries (`find_path_max_capacity`); throws PathFindError. */
  maxRoutableAmount(stats: ChannelStats): bigint;
  /**
   * A route for `amount`, or for the largest part down to `lowBound` one route carries; throws
   * PathFindError.
   */
  findRouteInRange(
    amount: bigint,
    lowBound: bigint | null,
    maxFee: bigint,
    stats: ChannelStats,
  ): { route: RouterHop[]; amount: bigint };
}

export interface PlanInput {
  source: string;
  /** What the new parts must deliver together. */
  remain: bigint;
  /** The fee budget left for them. */
  maxFee: bigint;
  maxParts: number;
  /** Parts in flight or fulfilled already. */
  activeParts: number;
  selfPay: boolean;
  /** Channels the active parts use. */
  stats: PlannedChannels;
  /**
   * A trampoline's own payment: what the budget has left after this node's fee on a part's first
   * channel and the part's route fee; throws the reference's texts when it does not cover them.
   */
  budgetLeft?: (maxFee: bigint, route: RouterHop[], routeFee: bigint) => bigint;
}

export interface PlannedPart {
  route: RouterHop[];
  amount: bigint;
  fee: bigint;
}

function sendError(what: string): SendPaymentError {
  return new SendPaymentError(`Send payment error: ${what}`);
}

export const NOT_ENOUGH_ROUTES = 'Send payment error: Failed to build enough routes for MPP payment';

/**
 * Splits `remain` into routes (the reference's `build_payment_routes`). Throws DomainError with
 * the reference's texts: `Failed to build route, <PathFindError>`, `Failed to build enough routes
 * for MPP payment`, `max_fee_amount is too low for selected route`.
 */
export function planParts(router: PartRouter, p: PlanInput): PlannedPart[] {
  if (p.remain === 0n) throw sendError(`Send amount ${p.remain} is not expected to be 0`);
  const stats = p.stats;
  const routeError = (e: unknown): never => {
    if (e instanceof PathFindError) throw sendError(`Failed to build route, ${e.message}`);
    throw e;
  };
  const maxParts = p.maxParts;
  let singleMax: bigint | null = null;
  if (maxParts > 1 && !p.selfPay) {
    let widest = 0n;
    try {
      widest = router.maxRoutableAmount(stats);
    } catch (e) {
      routeError(e);
    }
    if (widest * BigInt(maxParts) < p.remain) throw new SendPaymentError(NOT_ENOUGH_ROUTES);
    singleMax = widest;
  }
  const parts: PlannedPart[] = [];
  let remain = p.remain;
  let target = remain;
  let maxFee = p.maxFee;
  while (parts.length < maxParts - p.activeParts && remain > 0n) {
    let found: { route: RouterHop[]; amount: bigint } | undefined;
    try {
      found = router.findRouteInRange(target, maxParts > 1 ? 1n : null, maxFee, stats);
    } catch (e) {
      routeError(e);
    }
    const { route, amount } = found!;
    if (amount > remain) throw sendError('Route amount exceeds remaining amount');
    const fee = route[0]!.amountReceived - amount;
    if (p.budgetLeft) maxFee = p.budgetLeft(maxFee, route, fee);
    else if (fee > maxFee) throw sendError('max_fee_amount is too low for selected route');
    else maxFee -= fee;
    stats.add(p.source, route);
    parts.push({ route, amount, fee });
    remain -= amount;
    target = singleMax !== null && singleMax < remain ? singleMax : remain;
    // The reference gives up early when the parts left could not carry the rest at this size.
    if (remain > 0n && remain > amount * BigInt(maxParts - parts.length)) break;
  }
  if (remain > 0n) throw new SendPaymentError(NOT_ENOUGH_ROUTES);
  return parts;
}
