/**
 * Payment history and the success probability of a channel direction, the reference's port of
 * lnd's bimodal model (`../shared/reference/fiber-routing-protocol.md` §2.4 "History records",
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
  private readonly records = new Map<string, TimedResult>();

  constructor(
    /** Called after a record changes (null: deleted), so that a store can persist it. */
    private readonly onChange?: (outpoint: string, direction: Direction, result: TimedResult | null) => void,
  ) {}

  private key(outpoint: string, d: Direction): string {
    return `${outpoint}/${d}`;
  }

  get(outpoint: string, d: Direction): TimedResult | undefined {
    return this.records.get(this.key(outpoint, d));
  }

  /** Loads a stored record (no onChange). */
  load(outpoint: string, d: Direction, r: TimedResult): void {
    this.records.set(this.key(outpoint, d), { ...r });
  }

  entries(): { outpoint: string; direction: Direction; result: TimedResult }[] {
    return [...this.records.entries()].map(([k, result]) => {
      const i = k.lastIndexOf('/');
      return { outpoint: k.slice(0, i), direction: k.slice(i + 1) as Direction, result: { ...result } };
    });
  }

  removeChannel(outpoint: string): void {
    for (const d of ['forward', 'backward'] as const) {
      if (this.records.delete(this.key(outpoint, d))) this.onChange?.(outpoint, d, null);
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
    this.records.set(this.key(outpoint, d), next);
    this.onChange?.(outpoint, d, next);
  }

  /** A fresh enabled ChannelUpdate clears an empty record of its direction (`HI:679`). */
  processChannelUpdate(outpoint: string, d: Direction, disabled: boolean): void {
    if (disabled) return;
    const r = this.get(outpoint, d);
    if (r && r.failAmount === 0n && r.successAmount === 0n) {
      this.records.delete(this.key(outpoint, d));
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
