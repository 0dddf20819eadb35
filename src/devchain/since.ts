/**
 * `since` (RFC-0017) and EpochNumberWithFraction, as CKB's consensus reads them. Pure.
 * Bits: 63 relative, 62..61 metric (00 block, 01 epoch, 10 timestamp in seconds), 60..56 zero.
 */
export type SinceMetric = 'block' | 'epoch' | 'timestamp';

export interface Since {
  relative: boolean;
  metric: SinceMetric;
  /** Block count, epoch full value, or seconds. */
  value: bigint;
}

const VALUE_MASK = 0x00ff_ffff_ffff_ffffn;
const REMAIN_FLAGS = 0x1f00_0000_0000_0000n;
const METRIC_MASK = 0x6000_0000_0000_0000n;

/** Decodes a since; null when its flags are invalid (reserved bits set, metric 11). */
export function parseSince(raw: bigint): Since | null {
  if ((raw & REMAIN_FLAGS) !== 0n) return null;
  const relative = raw >> 63n === 1n;
  const value = raw & VALUE_MASK;
  switch (raw & METRIC_MASK) {
    case 0n:
      return { relative, metric: 'block', value };
    case 0x2000_0000_0000_0000n:
      return { relative, metric: 'epoch', value };
    case 0x4000_0000_0000_0000n:
      return { relative, metric: 'timestamp', value };
    default:
      return null;
  }
}

export function encodeSince(s: Since): bigint {
  const metric = s.metric === 'block' ? 0n : s.metric === 'epoch' ? 1n : 2n;
  return ((s.relative ? 1n : 0n) << 63n) | (metric << 61n) | (s.value & VALUE_MASK);
}

export interface Epoch {
  number: bigint;
  index: bigint;
  length: bigint;
}

export function epochFromFull(v: bigint): Epoch {
  return { number: v & 0xff_ffffn, index: (v >> 24n) & 0xffffn, length: (v >> 40n) & 0xffffn };
}

export function epochToFull(e: Epoch): bigint {
  return (e.length << 40n) | (e.index << 24n) | e.number;
}

/** CKB's `is_well_formed_increment`: index < length, or the zero fraction `(n, 0, 0)`. */
export function isWellFormedIncrement(e: Epoch): boolean {
  return e.length === 0n ? e.index === 0n : e.index < e.length;
}

/** `(n, 0, 0)` means whole epochs: read as `(n, 0, 1)`. */
export function normalizeEpoch(e: Epoch): Epoch {
  return e.length === 0n ? { number: e.number, index: 0n, length: 1n } : e;
}

/** Epoch as a rational `numerator / denominator` (in epochs). */
export function epochRational(e: Epoch): [bigint, bigint] {
  const n = normalizeEpoch(e);
  return [n.number * n.length + n.index, n.length];
}

/** a < b for rationals with positive denominators. */
export function rationalLess(a: [bigint, bigint], b: [bigint, bigint]): boolean {
  return a[0] * b[1] < b[0] * a[1];
}

export function rationalAdd(a: [bigint, bigint], b: [bigint, bigint]): [bigint, bigint] {
  return [a[0] * b[1] + b[0] * a[1], a[1] * b[1]];
}

/** The chain position a transaction is checked against: the block it would enter. */
export interface SinceEnv {
  blockNumber: bigint;
  /** Epoch full value of that block. */
  epoch: bigint;
  /** Median time (ms) of the previous 37 blocks ending at its parent. */
  medianTime: bigint;
}

/** Where an input cell was committed (absent for a cell created in the mempool). */
export interface CellCommit {
  blockNumber: bigint;
  epoch: bigint;
  /** Timestamp (ms) of the block that committed the cell. */
  timestamp: bigint;
}

export type SinceCheck = 'ok' | 'invalid' | 'immature';

/** One input's since against the env, as CKB's `SinceVerifier` decides. */
export function checkSince(raw: bigint, env: SinceEnv, cell: CellCommit | undefined): SinceCheck {
  if (raw === 0n) return 'ok';
  const s = parseSince(raw);
  if (!s) return 'invalid';
  if (s.metric === 'epoch' && !isWellFormedIncrement(epochFromFull(s.value))) return 'invalid';
  if (!s.relative) {
    if (s.metric === 'block') return env.blockNumber < s.value ? 'immature' : 'ok';
    if (s.metric === 'epoch') {
      return rationalLess(epochRational(epochFromFull(env.epoch)), epochRational(epochFromFull(s.value)))
        ? 'immature'
        : 'ok';
    }
    return env.medianTime < s.value * 1000n ? 'immature' : 'ok';
  }
  if (!cell) return 'immature';
  if (s.metric === 'block') return env.blockNumber < cell.blockNumber + s.value ? 'immature' : 'ok';
  if (s.metric === 'epoch') {
    const need = rationalAdd(epochRational(epochFromFull(cell.epoch)), epochRational(epochFromFull(s.value)));
    return rationalLess(epochRational(epochFromFull(env.epoch)), need) ? 'immature' : 'ok';
  }
  return env.medianTime < cell.timestamp + s.value * 1000n ? 'immature' : 'ok';
}

/** Median of timestamps as CKB takes it: sort, then the element at index len/2. */
export function medianOf(timestamps: bigint[]): bigint {
  if (timestamps.length === 0) return 0n;
  const sorted = [...timestamps].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return sorted[sorted.length >> 1] as bigint;
}

export const MEDIAN_TIME_BLOCK_COUNT = 37;

/** Epoch of block `n` on a chain with a constant epoch length (a dev chain's `permanent_difficulty`). */
export function epochOfBlock(n: bigint, length: bigint): bigint {
  if (n === 0n) return 0n;
  return epochToFull({ number: n / length, index: n % length, length });
}
