/**
 * Fiber's commitment lock (fiber-scripts `commitment-lock` at 8387efd, reference
 * `fiber-channel-protocol.md` §5.6), verified natively.
 *
 * args (57) = blake160(x-only revocation key) ‖ delay since (le64, relative epoch) ‖ version (be64)
 *           ‖ blake160(settlement script) ‖ settlement flag (0 = fresh commitment cell).
 * witness   = empty WitnessArgs (16) ‖ unlock count (1) ‖ …
 *   count 0: revocation — be64 version ≥ args version, x-only key, BIP340 signature over
 *            H(output0 ‖ packed data0 ‖ args[0..28] ‖ version).
 *   count >0: settlement — the settlement script, then unlock entries `t ‖ p ‖ sig65 [‖ preimage]`
 *            settling TLCs (by preimage before expiry, or after expiry) and/or one party's share;
 *            what is left must go to output 0 under the same lock with the new settlement script.
 * A failing slice or parse in the Rust contract panics; here it is a non-zero exit code too.
 */
import { ccc } from '@ckb-ccc/core';
import { concat, equalBytes } from '../../codec/index.ts';
import { blake160, ckbHash, recoverCompressed, sha256 } from '../../crypto/index.ts';
import { epochFromFull, parseSince } from '../since.ts';
import { EMPTY_WITNESS_ARGS, le64, le128, type ScriptVerifier, type TxContext } from './context.ts';
import { schnorrAuth } from './funding-lock.ts';

export const CL_ERR = {
  IndexOutOfBound: 1,
  LengthNotEnough: 3,
  Encoding: 4,
  MultipleInputs: 5,
  InvalidSince: 6,
  InvalidUnlockType: 7,
  InvalidWithPreimageFlag: 8,
  InvalidSettlementCount: 9,
  InvalidExpiry: 10,
  ArgsLenError: 11,
  WitnessLenError: 12,
  EmptyWitnessArgsError: 13,
  WitnessHashError: 14,
  InvalidRevocationVersion: 16,
  OutputCapacityError: 17,
  OutputLockError: 18,
  OutputTypeError: 19,
  OutputUdtAmountError: 20,
  PreimageError: 21,
  AuthError: 22,
} as const;

const TLC_LEN = 85;
const PARTY_LEN = 72;

interface Entry {
  t: number;
  sig: Uint8Array;
  preimage?: Uint8Array;
}

export const commitmentLock: ScriptVerifier = {
  name: 'commitment_lock',
  verify(tx, group) {
    if (group.inputIndices.length !== 1) return CL_ERR.MultipleInputs;
    const gi = group.inputIndices[0] as number;
    const input = tx.inputs[gi];
    if (!input) return CL_ERR.IndexOutOfBound;
    const args = ccc.bytesFrom(group.script.args);
    if (args.length !== 57) return CL_ERR.ArgsLenError;
    const w = tx.witnesses[gi];
    if (!w || w.length < 17) return CL_ERR.LengthNotEnough;
    if (!equalBytes(w.subarray(0, 16), EMPTY_WITNESS_ARGS)) return CL_ERR.EmptyWitnessArgsError;
    const rest = w.subarray(17);
    return w[16] === 0 ? revocation(tx, args, rest) : settlement(tx, group.script, gi, args, rest);
  },
};

function revocation(tx: TxContext, args: Uint8Array, w: Uint8Array): number {
  if (w.length < 8) return CL_ERR.LengthNotEnough;
  if (Buffer.compare(w.subarray(0, 8), args.subarray(28, 36)) < 0) return CL_ERR.InvalidRevocationVersion;
  const out0 = tx.tx.outputs[0];
  const data0 = tx.outputsData[0];
  if (!out0 || !data0) return CL_ERR.IndexOutOfBound;
  const len = Buffer.alloc(4);
  len.writeUInt32LE(data0.length);
  const msg = ckbHash(out0.toBytes(), len, data0, args.subarray(0, 28), w.subarray(0, 8));
  const sig = w.subarray(8);
  if (sig.length !== 96) return CL_ERR.AuthError;
  return schnorrAuth(sig.subarray(0, 32), sig.subarray(32), msg, args.subarray(0, 20)) ? 0 : CL_ERR.AuthError;
}

function settlement(tx: TxContext, script: ccc.Script, gi: number, args: Uint8Array, w: Uint8Array): number {
  const first = args[56] === 0;
  if (w.length < 1) return CL_ERR.WitnessLenError;
  const c = w[0] as number;
  const P = 1 + TLC_LEN * c;
  const S = P + PARTY_LEN;
  if (w.length < S) return CL_ERR.WitnessLenError;
  if (!equalBytes(blake160(w.subarray(0, S)), args.subarray(36, 56))) return CL_ERR.WitnessHashError;

  const entries: Entry[] = [];
  for (let i = S; i < w.length; ) {
    if (i + 67 > w.length) return CL_ERR.LengthNotEnough;
    const t = w[i] as number;
    const p = w[i + 1] as number;
    if (p > 1) return CL_ERR.InvalidWithPreimageFlag;
    if (t >= c && t !== 0xfe && t !== 0xff) return CL_ERR.InvalidUnlockType;
    const sig = w.subarray(i + 2, i + 67);
    i += 67;
    let preimage: Uint8Array | undefined;
    if (p === 1) {
      if (i + 32 > w.length) return CL_ERR.LengthNotEnough;
      preimage = w.subarray(i, i + 32);
      i += 32;
    }
    entries.push({ t, sig, preimage });
  }
  if (entries.length === 0) return CL_ERR.InvalidSettlementCount;
  const h = entries.filter((e) => e.t < c).length;

  // The since that proves time has passed: the first absolute-timestamp since among all inputs.
  let raw = 0n;
  for (const inp of tx.tx.inputs) {
    if (inp.since >> 61n === 2n) {
      raw = inp.since;
      break;
    }
  }
  const delay = le64(args, 20);
  const delaySince = parseSince(delay);
  if (delaySince?.metric !== 'epoch') return CL_ERR.InvalidSince;
  const groupSince = tx.tx.inputs[gi]?.since ?? 0n;
  const input = tx.inputs[gi] as (typeof tx.inputs)[number];
  const udt = input.output.type;
  let amt = udt ? (input.data.length >= 16 ? le128(input.data) : -1n) : input.output.capacity;
  if (amt < 0n) return CL_ERR.Encoding;
  const sub = (x: bigint) => {
    amt = amt > x ? amt - x : 0n;
  };

  const toVerify: [Uint8Array, Uint8Array][] = [];
  const kept: Uint8Array[] = [];
  let next = 0;
  for (let k = 0; k < c; k++) {
    const tlc = w.subarray(1 + TLC_LEN * k, 1 + TLC_LEN * (k + 1));
    const e = entries[next];
    if (!e || e.t !== k) {
      kept.push(tlc);
      continue;
    }
    next++;
    const offeredByHolder = ((tlc[0] as number) & 1) === 1;
    const sha = ((tlc[0] as number) & 2) === 2;
    let pkh: Uint8Array;
    if (raw === 0n) {
      if (first && !sinceAtLeast(groupSince, mulDelay(delay, 1n, 3n))) return CL_ERR.InvalidSince;
      const pre = e.preimage;
      if (!pre) return CL_ERR.PreimageError;
      const digest = sha ? sha256(pre) : ckbHash(pre);
      if (!equalBytes(digest.subarray(0, 20), tlc.subarray(17, 37))) return CL_ERR.PreimageError;
      pkh = offeredByHolder ? tlc.subarray(57, 77) : tlc.subarray(37, 57);
    } else {
      if (first && !sinceAtLeast(groupSince, mulDelay(delay, 2n, 3n))) return CL_ERR.InvalidSince;
      const expiry = le64(tlc, 77);
      if (!timestampAtLeast(raw, expiry)) return CL_ERR.InvalidExpiry;
      pkh = offeredByHolder ? tlc.subarray(37, 57) : tlc.subarray(57, 77);
    }
    sub(le128(tlc, 1));
    toVerify.push([e.sig, pkh]);
  }

  const remaining = entries.slice(next);
  const party = w.subarray(P, S);
  let newParty: Uint8Array = party;
  let allSettled = false;
  let partyUnlock = false;
  if (remaining.length === 1) {
    const e = remaining[0] as Entry;
    if (e.t !== 0xfe && e.t !== 0xff) return CL_ERR.InvalidUnlockType;
    if (first && !sinceAtLeast(groupSince, delay)) return CL_ERR.InvalidSince;
    partyUnlock = true;
    const zeros = new Uint8Array(36);
    if (e.t === 0xfe) {
      toVerify.push([e.sig, party.subarray(0, 20)]);
      sub(le128(party, 20));
      newParty = concat(zeros, party.subarray(36, 72));
      allSettled = party.subarray(36, 72).every((b) => b === 0);
    } else {
      toVerify.push([e.sig, party.subarray(36, 56)]);
      sub(le128(party, 56));
      newParty = concat(party.subarray(0, 36), zeros);
      allSettled = party.subarray(0, 36).every((b) => b === 0);
    }
  } else if (remaining.length > 1) {
    return CL_ERR.InvalidSettlementCount;
  }

  if (amt > 0n && !allSettled) {
    const newScript = concat(new Uint8Array([c - h]), ...kept, newParty);
    const out0 = tx.tx.outputs[0];
    const data0 = tx.outputsData[0];
    if (!out0 || !data0) return CL_ERR.IndexOutOfBound;
    const expectArgs = concat(args.subarray(0, 36), blake160(newScript), new Uint8Array([1]));
    if (
      out0.lock.codeHash !== script.codeHash ||
      out0.lock.hashType !== script.hashType ||
      !equalBytes(ccc.bytesFrom(out0.lock.args), expectArgs)
    ) {
      return CL_ERR.OutputLockError;
    }
    if (!udt) {
      if (out0.capacity !== amt) return CL_ERR.OutputCapacityError;
    } else {
      if (!out0.type?.eq(udt)) return CL_ERR.OutputTypeError;
      if (data0.length < 16 || le128(data0) !== amt) return CL_ERR.OutputUdtAmountError;
      if (!partyUnlock && out0.capacity !== input.output.capacity) return CL_ERR.OutputCapacityError;
    }
  }

  const msg = tx.messageWithoutDeps();
  for (const [sig, pkh] of toVerify) {
    const pk = recoverCompressed(msg, sig);
    if (!pk || !equalBytes(blake160(pk), pkh)) return CL_ERR.AuthError;
  }
  return 0;
}

/**
 * A fraction of the delay, as the contract's `mul`: (e, i, l) → num·(e·l+i) / (den·l), with the
 * denominator scaled down below 1800 (epoch length fits in 16 bits).
 */
export function mulDelay(delay: bigint, num: bigint, den: bigint): bigint {
  let { number: e, index: i, length: l } = epochFromFull(delay & 0x00ff_ffff_ffff_ffffn);
  if (l === 0n) {
    i = 0n;
    l = 1n;
  }
  const n = num * (e * l + i);
  const d = den * l;
  const q = n / d;
  const r = n % d;
  const s = d > 1800n ? d / 1800n + 1n : 1n;
  return (0xa0n << 56n) | ((d / s) << 40n) | ((r / s) << 24n) | q;
}

/** ckb-std `Since >=`: false unless both are relative epoch sinces; then epoch order. */
export function sinceAtLeast(have: bigint, need: bigint): boolean {
  const a = parseSince(have);
  const b = parseSince(need);
  if (!a || !b || !a.relative || !b.relative || a.metric !== 'epoch' || b.metric !== 'epoch') return false;
  return epochAtLeast(a.value, b.value);
}

function epochAtLeast(x: bigint, y: bigint): boolean {
  const norm = (v: bigint) => {
    const e = epochFromFull(v);
    return e.length === 0n ? { number: e.number, index: 0n, length: 1n } : e;
  };
  const a = norm(x);
  const b = norm(y);
  if (a.number !== b.number) return a.number > b.number;
  return a.index * b.length >= b.index * a.length;
}

function timestampAtLeast(have: bigint, need: bigint): boolean {
  const a = parseSince(have);
  const b = parseSince(need);
  if (!a || !b || a.relative || b.relative || a.metric !== 'timestamp' || b.metric !== 'timestamp')
    return false;
  return a.value >= b.value;
}
