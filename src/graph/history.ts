/**
 * Payment history and the success probability of a channel direction, the reference's port of
 * lnd's bimodal model (`docs/reference/fiber-routing-protocol.md` §2.4 "History records",
 * §4.2). Pure: time is passed in; the store persists records through the `onChange` hook.
 */

/** `Forward` = node1→node2 (the smaller pubkey sends). */
export type Direction = 'forward' | 'backward';

export interface TimedResult {
  failTime: number;
  failAmount: bigint;
  successTime: number;
  successAmount: bigint;
}

export const BIMODAL_SCALE = 800_000_000;
export const BIMODAL_DECAY_MS = 1_800_000;
export const MIN_FAIL_RELAX_INTERVAL_MS = 60_000;
const U128_MAX = (1n << 128n) - 1n;

/** Rust's `f64 as u128`: truncates, saturates, NaN → 0. */
export function f64ToU128(x: number): bigint {
  if (Number.isNaN(x) || x <= 0) return 0n;
  if (x >= 3.402823669209385e38) return U128_MAX;
  return BigInt(Math.trunc(x));
}

export function directionOf(from: string, to: string): Direction {
  return from < to ? 'forward' : 'backward';
}

export class PaymentHistory {
  /** outpoint → direction → record (nested, so lookups in the path finder build no strings). */
  private readonly records = new Map<string, Partial<Record<Direction, TimedResult>>>();

  constructor(
    /** Called after a record changes (null: deleted), so that a store can persist it. */
    private readonly onChange?: (outpoint: string, direction: Direction, result: TimedResult | null) => void,
  ) {}

  get(outpoint: string, d: Direction): TimedResult | undefined {
    return this.records.get(outpoint)?.[d];
  }

  private set(outpoint: string, d: Direction, r: TimedResult): void {
    const entry = this.records.get(outpoint);
    if (entry) entry[d] = r;
    else this.records.set(outpoint, { [d]: r });
  }

  private remove(outpoint: string, d: Direction): boolean {
    const entry = this.records.get(outpoint);
    if (!entry?.[d]) return false;
    delete entry[d];
    if (!entry.forward && !entry.backward) this.records.delete(outpoint);
    return true;
  }

  /** Loads a stored record (no onChange). */
  load(outpoint: string, d: Direction, r: TimedResult): void {
    this.set(outpoint, d, { ...r });
  }

  entries(): { outpoint: string; direction: Direction; result: TimedResult }[] {
    const out: { outpoint: string; direction: Direction; result: TimedResult }[] = [];
    for (const [outpoint, entry] of this.records) {
      for (const direction of ['forward', 'backward'] as const) {
        const r = entry[direction];
        if (r) out.push({ outpoint, direction, result: { ...r } });
      }
    }
    return out;
  }

  removeChannel(outpoint: string): void {
    for (const d of ['forward', 'backward'] as const) {
      if (this.remove(outpoint, d)) this.onChange?.(outpoint, d, null);
    }
  }

  /** One success or failure observed on a channel direction (`HI` apply_pair_result). */
  applyPairResult(outpoint: string, d: Direction, amount: bigint, success: boolean, time: number): void {
    const current = this.get(outpoint, d);
    let next: TimedResult;
    if (current) {
      next = { ...current };
      if (success) {
        next.successTime = time;
        if (amount > next.successAmount) next.successAmount = amount;
        if (next.failTime !== 0 && amount >= next.failAmount) next.failAmount = amount + 1n;
      } else {
        if (
          amount > next.failAmount &&
          next.failTime !== 0 &&
          time - next.failTime < MIN_FAIL_RELAX_INTERVAL_MS
        )
          return;
        next.failAmount = amount;
        next.failTime = time;
        if (amount === 0n) next.successAmount = 0n;
        else if (amount <= next.successAmount) next.successAmount = amount - 1n;
      }
    } else {
      next = success
        ? { failTime: 0, failAmount: 0n, successTime: time, successAmount: amount }
        : { failTime: time, failAmount: amount, successTime: 0, successAmount: 0n };
    }
    this.set(outpoint, d, next);
    this.onChange?.(outpoint, d, next);
  }

  /** A fresh enabled ChannelUpdate clears an empty record of its direction (`HI:679`). */
  processChannelUpdate(outpoint: string, d: Direction, disabled: boolean): void {
    if (disabled) return;
    const r = this.get(outpoint, d);
    if (r && r.failAmount === 0n && r.successAmount === 0n) {
      this.remove(outpoint, d);
      this.onChange?.(outpoint, d, null);
    }
  }

  /** The probability that `from` can send `amount` to `to` over `outpoint` (1 without history). */
  evalProbability(
    from: string,
    to: string,
    outpoint: string,
    amount: bigint,
    capacity: bigint,
    now: number,
  ): number {
    if (this.records.size === 0) return 1.0;
    const r = this.get(outpoint, directionOf(from, to));
    if (!r) return 1.0;
    let fail = capacity;
    let success = 0n;
    if (r.failTime !== 0) fail = cannotSend(r.failAmount, r.failTime, capacity, now);
    if (r.successTime !== 0) success = r.successAmount;
    return channelProbability(capacity, success, fail, amount);
  }
}

/** The fail amount relaxes towards the capacity as the failure ages. */
export function cannotSend(failAmount: bigint, failTime: number, capacity: bigint, now: number): bigint {
  let f = failAmount > capacity ? capacity : failAmount;
  if (f < 1n) f = 1n;
  const elapsed = Math.max(0, now - failTime);
  const factor = Math.exp(-elapsed / BIMODAL_DECAY_MS);
  const mul = f * f64ToU128(1.0 / factor);
  const saturated = mul > U128_MAX ? U128_MAX : mul;
  return saturated < capacity ? saturated : capacity;
}

export function channelProbability(
  capacity: bigint,
  successAmount: bigint,
  failAmount: bigint,
  amount: bigint,
): number {
  if (amount > capacity || amount === 0n || capacity === 0n) return 0.0;
  const fail = failAmount < capacity ? failAmount : capacity;
  const success = successAmount < capacity ? successAmount : capacity;
  if (fail === success) return 1.0;
  if (fail < success) return 0.0;
  if (amount >= fail) return 0.0;
  const c = Number(capacity);
  const prob = integral(c, Number(amount), Number(fail));
  if (Number.isNaN(prob)) return 0.0;
  const norm = integral(c, Number(success), Number(fail));
  if (norm === 0) return 0.0;
  const p = prob / norm;
  if (Number.isNaN(p)) return 0.0;
  return Math.min(1, Math.max(0, p));
}

function primitive(c: number, x: number): number {
  const s = BIMODAL_SCALE;
  const ecs = Math.exp(-c / s);
  const exs = Math.exp(-x / s);
  const excs = Math.exp((x - c) / s);
  const norm = -2.0 * ecs + 2.0;
  return (-exs + excs) / norm;
}

function integral(capacity: number, lower: number, upper: number): number {
  if (lower < 0 || lower > upper) return 0;
  return primitive(capacity, upper) - primitive(capacity, lower);
}

/**
 * One node of an attempt's route as the reference records it (`SessionRouteNode`): the source
 * first; `channelOutpoint` is the channel to the next node and `amount` what that next node
 * receives; the last node (the target) has a zero outpoint and the final amount.
 */
export interface SessionRouteNode {
  pubkey: string;
  channelOutpoint: string;
  amount: bigint;
}

interface PairResult {
  outpoint: string;
  direction: Direction;
  amount: bigint;
  success: boolean;
}

/** The reference's `InternalResult`: pair results of one attempt, then an optional failed node. */
class AttemptResult {
  readonly pairs = new Map<string, PairResult>();
  readonly touched = new Map<string, Set<string>>();
  failNode: string | null = null;

  constructor(private readonly nodes: SessionRouteNode[]) {}

  private add(a: string, b: string, outpoint: string, amount: bigint, success: boolean): void {
    const direction = directionOf(a, b);
    for (const n of [a, b]) {
      const set = this.touched.get(n) ?? new Set<string>();
      set.add(outpoint);
      this.touched.set(n, set);
    }
    this.pairs.set(`${outpoint}/${direction}`, { outpoint, direction, amount, success });
  }

  /** FP(i): both directions of channel (i−1, i) failed with amount 0. */
  failPair(i: number): void {
    if (i <= 0 || i >= this.nodes.length) return;
    const a = this.nodes[i - 1]!;
    const b = this.nodes[i]!;
    this.add(a.pubkey, b.pubkey, a.channelOutpoint, 0n, false);
    this.add(b.pubkey, a.pubkey, a.channelOutpoint, 0n, false);
  }

  /** FPB(i): direction i−1 → i failed with the amount node i forwards (`nodes[i].amount`). */
  failPairBalanced(i: number): void {
    if (i <= 0 || i >= this.nodes.length) return;
    const a = this.nodes[i - 1]!;
    const b = this.nodes[i]!;
    this.add(a.pubkey, b.pubkey, a.channelOutpoint, b.amount, false);
  }

  /** OK(start..end): each pair i → i+1 succeeded with `nodes[i].amount`. */
  succeedRange(start: number, end: number): void {
    for (let i = start; i < end && i + 1 < this.nodes.length; i++) {
      const a = this.nodes[i]!;
      this.add(a.pubkey, this.nodes[i + 1]!.pubkey, a.channelOutpoint, a.amount, true);
    }
  }

  /** FN(i): the pairs on both sides of node i, then every record of the node's channels. */
  failNodeAt(i: number): void {
    this.failNode = this.nodes[i]!.pubkey;
    if (i > 0) this.failPair(i);
    if (i + 1 < this.nodes.length) this.failPair(i + 1);
  }
}

const NO_RETRY_AT_SOURCE = new Set([
  'InvalidOnionVersion',
  'InvalidOnionHmac',
  'InvalidOnionKey',
  'InvalidOnionPayload',
  'IncorrectOrUnknownPaymentDetails',
  'InvoiceExpired',
  'InvoiceCancelled',
  'UnknownNextPeer',
  'RequiredNodeFeatureMissing',
  'ExpiryTooSoon',
  'ExpiryTooFar',
  'HoldTlcTimeout',
]);

const FINAL_GIVE_UP = new Set([
  'IncorrectOrUnknownPaymentDetails',
  'RequiredNodeFeatureMissing',
  'RequiredChannelFeatureMissing',
  'PermanentNodeFailure',
  'InvoiceExpired',
  'InvoiceCancelled',
  'HoldTlcTimeout',
]);

/**
 * The reference's `record_payment_fail` (`docs/reference/fiber-routing-protocol.md` §2.4):
 * which pairs of the route to penalise or credit for an error `code` (a TlcErrorCode name) raised
 * by `erringNode`, and whether the payment may retry. A node outside the route stops the payment.
 */
export function judgeFailure(
  nodes: SessionRouteNode[],
  erringNode: string | null,
  code: string,
): { result: AttemptResult; retry: boolean } {
  const result = new AttemptResult(nodes);
  const idx = erringNode === null ? -1 : nodes.findIndex((n) => n.pubkey === erringNode);
  if (idx < 0 || nodes.length < 2) return { result, retry: false };
  const len = nodes.length;
  let retry = true;
  if (idx === 0) {
    if (NO_RETRY_AT_SOURCE.has(code)) retry = false;
    else if (code === 'TemporaryChannelFailure') result.failPairBalanced(1);
  } else if (idx === len - 1) {
    if (code === 'FinalIncorrectExpiryDelta' || code === 'FinalIncorrectTlcAmount') {
      if (len === 2) {
        retry = false;
        result.failNodeAt(len - 1);
      } else {
        result.failPair(idx - 1);
        result.succeedRange(0, idx - 2);
      }
    } else if (FINAL_GIVE_UP.has(code)) {
      retry = false;
      result.succeedRange(0, len - 1);
    } else if (code === 'ExpiryTooSoon' || code === 'ExpiryTooFar') {
      retry = false;
    } else {
      result.failNodeAt(len - 1);
      result.succeedRange(0, len - 2);
    }
  } else {
    switch (code) {
      case 'InvalidOnionVersion':
      case 'InvalidOnionHmac':
      case 'InvalidOnionKey':
      case 'InvalidOnionError':
      case 'IncorrectTlcDirection':
        result.failPair(idx);
        break;
      case 'InvalidOnionPayload':
        result.failNodeAt(idx);
        if (idx > 1) result.succeedRange(0, idx - 1);
        break;
      case 'UnknownNextPeer':
      case 'PermanentChannelFailure':
        result.failPair(idx + 1);
        break;
      case 'FeeInsufficient':
        result.failPairBalanced(idx + 1);
        if (idx > 1) result.succeedRange(0, idx);
        break;
      case 'IncorrectTlcExpiry':
        retry = false;
        if (idx === 1) result.failNodeAt(1);
        else {
          result.failPair(idx - 1);
          result.succeedRange(0, idx - 2);
        }
        break;
      case 'TemporaryChannelFailure':
      case 'ChannelDisabled':
      case 'TemporaryNodeFailure':
      case 'RequiredNodeFeatureMissing':
      case 'AmountBelowMinimum':
        result.failPairBalanced(idx + 1);
        result.succeedRange(0, idx);
        break;
      case 'ExpiryTooSoon':
      case 'ExpiryTooFar':
        result.succeedRange(0, idx);
        break;
      case 'PermanentNodeFailure':
      case 'RequiredChannelFeatureMissing':
        result.failNodeAt(idx);
        break;
      default:
        // IncorrectOrUnknownPaymentDetails, and final-hop errors a middle hop should not raise
        retry = false;
    }
  }
  return { result, retry };
}

/** Records of an attempt applied to a history (`apply_internal_result`). */
export function applyAttemptResult(
  history: PaymentHistory,
  result: AttemptResult,
  nodeChannels: Map<string, Set<string>>,
  now: number,
): void {
  for (const p of result.pairs.values())
    history.applyPairResult(p.outpoint, p.direction, p.amount, p.success, now);
  for (const [node, set] of result.touched) {
    const known = nodeChannels.get(node) ?? new Set<string>();
    for (const o of set) known.add(o);
    nodeChannels.set(node, known);
  }
  if (result.failNode !== null) {
    const channels = nodeChannels.get(result.failNode) ?? new Set<string>();
    for (const e of history.entries()) {
      if (channels.has(e.outpoint)) history.applyPairResult(e.outpoint, e.direction, 0n, false, now);
    }
  }
}

/** Success of a whole route: OK(0..len−1). */
export function judgeSuccess(nodes: SessionRouteNode[]): AttemptResult {
  const r = new AttemptResult(nodes);
  r.succeedRange(0, nodes.length - 1);
  return r;
}

export type { AttemptResult };
