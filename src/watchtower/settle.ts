/**
 * Settling a commitment cell after its delay, pure (`fiber-channel-protocol.md` §5.3, §5.6,
 * §5.7): reading the settlement script, choosing the next unlock this side may make — a TLC it
 * receives whose preimage is known, a TLC it offered that has expired, else its own share — and
 * the settlement script the contract will require of the continuation cell.
 */
import { ccc } from '@ckb-ccc/core';
import { type ParsedScript, parseSettlementScript, scriptAfter, XW } from '../channel/index.ts';
import { blake160 } from '../crypto/index.ts';

/** The contract's `mul(D, num, den)`: a fraction of a relative-epoch since. */
export function mulDelay(delay: bigint, num: bigint, den: bigint): bigint {
  const e = delay & 0xff_ffffn;
  let i = (delay >> 24n) & 0xffffn;
  let l = (delay >> 40n) & 0xffffn;
  if (l === 0n) {
    i = 0n;
    l = 1n;
  }
  const n = num * (e * l + i);
  const d = den * l;
  const s = d > 1800n ? d / 1800n + 1n : 1n;
  return (0xa0n << 56n) | ((d / s) << 40n) | (((n % d) / s) << 24n) | (n / d);
}

export type Role = 'holder' | 'other';

export interface SettleInput {
  script: Uint8Array;
  /** The cell's lock args (57 bytes). */
  args: Uint8Array;
  /** What the cell holds: its capacity, or for a UDT cell its token amount. */
  capacity: bigint;
  role: Role;
  /** Our key for the party unlock; null = leave our share to someone else. */
  partyKey: Uint8Array | null;
  /** Our key for a TLC (its 85-byte entry), or null. */
  tlcKey(entry: Uint8Array): Uint8Array | null;
  /** A known preimage for a payment hash starting with these 20 bytes. */
  preimage(hash20: Uint8Array): Uint8Array | null;
  /** Chain median time, seconds. */
  nowSec: bigint;
  /** Occupied capacity of a continuation cell (shannons). */
  continuationOccupied: bigint;
}

export interface SettleAction {
  /** Unlock type: the TLC index, or 0xFE / 0xFF. */
  t: number;
  key: Uint8Array;
  preimage: Uint8Array | null;
  /** Since of the commitment-cell input. */
  since: bigint;
  /** Absolute-timestamp since for a fee input (expiry path), else 0. */
  feeSince: bigint;
  /** What we take out of the cell. */
  amount: bigint;
  /** The continuation cell, when something stays locked. */
  /** `capacity`: what stays in it (shannons, or tokens for a UDT cell). */
  continuation: { capacity: bigint; args: Uint8Array } | null;
}

/** The settlement witness: `XW ‖ 01 ‖ script ‖ t ‖ p ‖ sig65 [‖ preimage]` (one unlock entry). */
export function settlementWitness(script: Uint8Array, a: SettleAction, sig: Uint8Array): ccc.Hex {
  const entry = ccc.bytesConcat([a.t, a.preimage ? 1 : 0], sig, a.preimage ?? new Uint8Array(0));
  return ccc.hexFrom(ccc.bytesConcat(XW, [1], script, entry));
}

const le128 = (b: Uint8Array) => ccc.numLeFromBytes(b.subarray(0, 16));
const le64 = (b: Uint8Array) => ccc.numLeFromBytes(b.subarray(0, 8));

/** The next unlock we can make on this cell now, or null. */
export function nextSettlement(x: SettleInput): SettleAction | null {
  const p = parseSettlementScript(x.script);
  if (!p || x.args.length !== 57) return null;
  const first = x.args[56] === 0;
  const delay = le64(x.args.subarray(20, 28));
  const finish = (
    t: number,
    key: Uint8Array,
    amount: bigint,
    rest: Omit<SettleAction, 't' | 'key' | 'amount' | 'continuation'>,
  ) => {
    const take = amount < x.capacity ? amount : x.capacity;
    const left = x.capacity - take;
    const next = scriptAfter(p, t < 0xfe ? t : null, t >= 0xfe ? (t as 0xfe | 0xff) : null);
    const np = parseSettlementScript(next) as ParsedScript;
    const allSettled = np.party.every((b) => b === 0);
    const continuation =
      left > 0n && !allSettled
        ? { capacity: left, args: ccc.bytesConcat(x.args.subarray(0, 36), blake160(next), [1]) }
        : null;
    // A continuation below its occupied capacity cannot exist: the other side must go first.
    if (continuation && continuation.capacity < x.continuationOccupied) return null;
    // Without a continuation the contract checks no output: whatever the cell still holds (a TLC
    // its offerer abandoned, say) is taken rather than left to the miners as fee.
    return { t, key, amount: continuation ? take : x.capacity, continuation, ...rest };
  };
  for (const [k, e] of p.tlcs.entries()) {
    const offeredByHolder = ((e[0] as number) & 1) === 1;
    const receiver: Role = offeredByHolder ? 'other' : 'holder';
    const amount = le128(e.subarray(1));
    const key = x.tlcKey(e);
    if (!key) continue;
    if (receiver === x.role) {
      const pre = x.preimage(e.subarray(17, 37));
      if (pre) {
        const a = finish(k, key, amount, {
          preimage: pre,
          since: first ? mulDelay(delay, 1n, 3n) : 0n,
          feeSince: 0n,
        });
        if (a) return a;
      }
    } else {
      const expiry = le64(e.subarray(77)) & 0x00ff_ffff_ffff_ffffn;
      if (x.nowSec >= expiry) {
        const a = finish(k, key, amount, {
          preimage: null,
          since: first ? mulDelay(delay, 2n, 3n) : 0n,
          feeSince: (0x40n << 56n) | x.nowSec,
        });
        if (a) return a;
      }
    }
  }
  if (!x.partyKey) return null;
  // Our share only once no TLC we may still claim is left: once both shares are out, the
  // contract no longer checks outputs and the last settler takes whatever TLCs remain. What may
  // stay behind is a TLC we received that has expired (its offerer's to take back).
  const waiting = p.tlcs.some((e) => {
    const receiver: Role = ((e[0] as number) & 1) === 1 ? 'other' : 'holder';
    const expiry = le64(e.subarray(77)) & 0x00ff_ffff_ffff_ffffn;
    return receiver !== x.role || x.nowSec < expiry;
  });
  if (waiting) return null;
  const mine = x.role === 'holder' ? p.party.subarray(0, 36) : p.party.subarray(36, 72);
  if (mine.every((b) => b === 0)) return null;
  return finish(x.role === 'holder' ? 0xfe : 0xff, x.partyKey, le128(mine.subarray(20)), {
    preimage: null,
    since: first ? delay : 0n,
    feeSince: 0n,
  });
}
