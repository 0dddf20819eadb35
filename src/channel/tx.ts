/**
 * Pure builders of the channel's layer-1 transactions (`fiber-channel-protocol.md` §4–§6):
 * funding cell, commitment transaction with its 57-byte commitment-lock args and settlement
 * script, the messages MuSig2 signs, revocation, settlement after the delay, cooperative close.
 */
import { ccc } from '@ckb-ccc/core';
import { SHANNONS_PER_CKB as CKB, cellOutputBytes, concat, rawTxBytes } from '../codec/index.ts';
import { blake160, ckbHash, signRecoverable } from '../crypto/index.ts';
import { aggregateXOnly, sorted2 } from './musig.ts';

export { CKB };
/** `WitnessArgs` with every field empty: the prefix of every funding/commitment witness. */
export const XW = new Uint8Array([16, 0, 0, 0, 16, 0, 0, 0, 16, 0, 0, 0, 16, 0, 0, 0]);

export interface ScriptInfo {
  codeHash: ccc.HexLike;
  hashType: ccc.HashTypeLike;
  cellDeps: ccc.CellDepLike[];
}

/**
 * Fixed-width integers as bytes, as ccc's `numLeToBytes` / `numBeToBytes` give them (a negative
 * value in two's complement, one too large refused) without its detour through a hex string: a
 * commitment writes two per pending TLC, several times a round.
 */
function fixedBytes(v: bigint, bytes: 8 | 16, littleEndian: boolean): Uint8Array {
  const bits = bytes * 8;
  if (v >= 1n << BigInt(bits)) throw new RangeError('number overflow');
  const u = BigInt.asUintN(bits, v);
  const out = new Uint8Array(bytes);
  const view = new DataView(out.buffer);
  if (bytes === 8) view.setBigUint64(0, u, littleEndian);
  else {
    view.setBigUint64(0, BigInt.asUintN(64, u), true);
    view.setBigUint64(8, u >> 64n, true);
  }
  return out;
}
export const le64 = (v: bigint) => fixedBytes(v, 8, true);
export const le128 = (v: bigint) => fixedBytes(v, 16, true);
export const be64 = (v: bigint) => fixedBytes(v, 8, false);

/**
 * The least either side of a CKB channel may hold (balance + reserve): the occupied capacity of a
 * commitment-lock cell (8 capacity + 32 code hash + 1 hash type + 57 args bytes). When one side
 * settles a commitment first, the other side's share must stay behind as such a cell, and the
 * commitment lock wants its capacity exact — so a side holding less could never be settled
 * around, and the other side's funds would wait on it for ever. The seed's 62-CKB reserve stays
 * what is shown apart from the balance; this floor is what may not be spent below.
 */
export const SIDE_FLOOR = 98n * CKB;

/** `M(tx)`: the hash of the raw transaction with its cell deps emptied. */
export function txMessage(tx: ccc.Transaction): Uint8Array {
  return ckbHash(rawTxBytes(tx, { withCellDeps: false }));
}

/** `tx.hash()`, with the direct molecule writer (`codec/ckb-tx.ts`). */
export function txHash(tx: ccc.Transaction): ccc.Hex {
  return ccc.hexFrom(ckbHash(rawTxBytes(tx)));
}

export function fundingLockScript(info: ScriptInfo, pkA: Uint8Array, pkB: Uint8Array): ccc.Script {
  return ccc.Script.from({
    codeHash: info.codeHash,
    hashType: info.hashType,
    args: blake160(aggregateXOnly(sorted2(pkA, pkB))),
  });
}

/** Witness of a funding-cell spend: `XW ‖ xonly(Q) ‖ sig64` (112 bytes). */
export function fundingWitness(pkA: Uint8Array, pkB: Uint8Array, sig: Uint8Array): ccc.Hex {
  return ccc.hexFrom(concat(XW, aggregateXOnly(sorted2(pkA, pkB)), sig));
}

export interface SettlementTlc {
  /** Offered by the commitment's holder. */
  offeredByHolder: boolean;
  /** 0 = ckb blake2b, 1 = sha256. */
  hashAlgorithm: number;
  amount: bigint;
  paymentHash: Uint8Array;
  holderKeyHash: Uint8Array;
  otherKeyHash: Uint8Array;
  /** Absolute unix ms. */
  expiry: bigint;
}

export interface SettlementParties {
  holderPkh: Uint8Array;
  holderAmount: bigint;
  otherPkh: Uint8Array;
  otherAmount: bigint;
}

/** One TLC of a settlement script: 85 bytes (§5.3). */
export function settlementEntry(t: SettlementTlc): Uint8Array {
  const out = new Uint8Array(SETTLEMENT_ENTRY_BYTES);
  out[0] = (t.hashAlgorithm << 1) | (t.offeredByHolder ? 1 : 0);
  out.set(le128(t.amount), 1);
  out.set(t.paymentHash.subarray(0, 20), 17);
  out.set(t.holderKeyHash, 37);
  out.set(t.otherKeyHash, 57);
  out.set(le64((0x40n << 56n) | (t.expiry / 1000n)), 77);
  return out;
}

const SETTLEMENT_ENTRY_BYTES = 85;

/** `count ‖ TLC×85 ‖ holderPKH ‖ le128 ‖ otherPKH ‖ le128` (§5.3). */
export function settlementScript(tlcs: SettlementTlc[], p: SettlementParties): Uint8Array {
  return settlementScriptOf(tlcs.map(settlementEntry), p);
}

/** The settlement script from its TLCs' entries (`settlementEntry`), in order. */
export function settlementScriptOf(entries: Uint8Array[], p: SettlementParties): Uint8Array {
  const out = new Uint8Array(1 + entries.length * SETTLEMENT_ENTRY_BYTES + 72);
  out[0] = entries.length;
  let at = 1;
  for (const e of entries) {
    out.set(e, at);
    at += SETTLEMENT_ENTRY_BYTES;
  }
  out.set(p.holderPkh, at);
  out.set(le128(p.holderAmount), at + 20);
  out.set(p.otherPkh, at + 36);
  out.set(le128(p.otherAmount), at + 56);
  return out;
}

/** The relative-epoch since of the commitment delay, as lock args carry it. */
export function delaySince(delayEpoch: bigint): bigint {
  return (0xa0n << 56n) | delayEpoch;
}

/** The 57 bytes of §5.2. `revocationKeys` = [non-holder funding pubkey, holder funding pubkey]. */
export function commitmentLockArgs(
  revocationKeys: Uint8Array[],
  delayEpoch: bigint,
  version: bigint,
  script: Uint8Array,
): Uint8Array {
  return concat(
    revocationLockPrefix(revocationKeys, delayEpoch),
    be64(version),
    scriptHash(script),
    new Uint8Array([0]),
  );
}

/**
 * The first 28 bytes of a commitment's lock args (the revocation key hash and the delay): what a
 * revocation signs of the revoked commitment. They never change for a holder of a channel, so a
 * revocation needs no commitment built to get them.
 */
export function revocationLockPrefix(revocationKeys: Uint8Array[], delayEpoch: bigint): Uint8Array {
  return concat(revocationKeyHash(revocationKeys), le64(delaySince(delayEpoch)));
}

/**
 * blake160 of the x-only aggregate of a commitment's revocation keys, memoized by the keys: a
 * channel has two such pairs (one per holder) for its whole life, and every commitment built
 * hashed them again. Bounded: cleared past 10,000 pairs.
 */
const revocationKeyHashes = new Map<string, Uint8Array>();
function revocationKeyHash(keys: Uint8Array[]): Uint8Array {
  const id = keys.map((k) => Buffer.from(k.buffer, k.byteOffset, k.byteLength).toString('hex')).join('');
  let v = revocationKeyHashes.get(id);
  if (!v) {
    if (revocationKeyHashes.size >= 10_000) revocationKeyHashes.clear();
    v = blake160(aggregateXOnly(keys));
    revocationKeyHashes.set(id, v);
  }
  return v;
}

/**
 * blake160 of a settlement script, remembered for the last few scripts: a round builds the same
 * commitment several times (signed, completed, revoked), and at 64 pending TLCs the script is
 * 5.5 KB of BLAKE2b in JavaScript, where comparing it with a remembered one is a memcmp.
 */
const recentScripts: { script: Uint8Array; hash: Uint8Array }[] = [];
const RECENT_SCRIPTS = 8;
function scriptHash(script: Uint8Array): Uint8Array {
  for (const r of recentScripts) if (Buffer.compare(r.script, script) === 0) return r.hash;
  const hash = blake160(script);
  recentScripts.unshift({ script: script.slice(), hash });
  if (recentScripts.length > RECENT_SCRIPTS) recentScripts.pop();
  return hash;
}

/**
 * Serialized size in a block (+4) of a mock commitment tx, for the commitment fee. It depends only
 * on the dep count and the UDT args' length (every other field has a fixed size), so it is built
 * once per shape: every commitment of every round asks for it.
 */
export function commitmentTxSize(
  depCount: number,
  lockInfo: ScriptInfo,
  udt?: ccc.ScriptLike | null,
): number {
  const key = `${depCount}:${udt ? ccc.bytesFrom(udt.args).length : -1}`;
  let size = commitmentSizes.get(key);
  if (size === undefined) {
    size = mockCommitmentSize(depCount, lockInfo, udt);
    commitmentSizes.set(key, size);
  }
  return size;
}

const commitmentSizes = new Map<string, number>();

function mockCommitmentSize(depCount: number, lockInfo: ScriptInfo, udt?: ccc.ScriptLike | null): number {
  return mockTxSize(depCount, {
    outputs: [
      {
        capacity: 0n,
        lock: { codeHash: lockInfo.codeHash, hashType: lockInfo.hashType, args: new Uint8Array(57) },
        type: udt ?? undefined,
      },
    ],
    outputsData: [udt ? new Uint8Array(16) : '0x'],
    witnesses: [new Uint8Array(112)],
  });
}

/** Serialized size in a block (+4) of a tx spending one cell with `depCount` code deps. */
function mockTxSize(
  depCount: number,
  rest: Pick<ccc.TransactionLike, 'outputs' | 'outputsData' | 'witnesses'>,
): number {
  const mock = ccc.Transaction.from({
    version: 0,
    cellDeps: Array.from({ length: depCount }, () => ({
      outPoint: { txHash: `0x${'00'.repeat(32)}`, index: 0 },
      depType: 'code',
    })),
    inputs: [{ previousOutput: { txHash: `0x${'00'.repeat(32)}`, index: 0 }, since: 0n }],
    ...rest,
  });
  return mock.toBytes().length + 4;
}

export function feeOf(feeRate: bigint, size: number): bigint {
  return (feeRate * BigInt(size)) / 1000n;
}

export interface CommitmentInput {
  fundingOutPoint: ccc.OutPointLike;
  commitmentLock: ScriptInfo;
  args: Uint8Array;
  /** Capacity of the commitment cell (total − fee, or reserves − fee for UDT). */
  capacity: bigint;
  udt?: { script: ccc.ScriptLike; total: bigint } | null;
}

/** The commitment tx, unsigned and without cell deps (the signed message ignores them). */
export function commitmentTx(c: CommitmentInput): ccc.Transaction {
  return ccc.Transaction.from({
    version: 0,
    cellDeps: [],
    inputs: [{ previousOutput: c.fundingOutPoint, since: 0n }],
    outputs: [
      {
        capacity: c.capacity,
        lock: { codeHash: c.commitmentLock.codeHash, hashType: c.commitmentLock.hashType, args: c.args },
        type: c.udt?.script,
      },
    ],
    outputsData: [c.udt ? le128(c.udt.total) : '0x'],
  });
}

/**
 * The message a revocation of version `version` signs (§3.2b); `args` of the revoked commitment,
 * or only their first 28 bytes (`revocationLockPrefix`): the rest is not signed.
 */
export function revocationMessage(
  out: ccc.CellOutputLike,
  data: Uint8Array,
  args: Uint8Array,
  version: bigint,
): Uint8Array {
  const len = new Uint8Array(4);
  new DataView(len.buffer).setUint32(0, data.length, true);
  return ckbHash(cellOutputBytes(ccc.CellOutput.from(out)), len, data, args.subarray(0, 28), be64(version));
}

/** The revocation witness: `XW ‖ 00 ‖ be64(version) ‖ xonly ‖ sig64`. */
export function revocationWitness(revocationKeys: Uint8Array[], version: bigint, sig: Uint8Array): ccc.Hex {
  return ccc.hexFrom(concat(XW, new Uint8Array([0]), be64(version), aggregateXOnly(revocationKeys), sig));
}

/**
 * A party settlement of a commitment cell (after the delay): the settling side takes its amount;
 * what is left stays under the commitment lock with its block zeroed and the pending TLCs kept
 * (`fiber-channel-protocol.md` §5.6 B.6–7: the contract allows a party unlock with TLCs pending).
 * `holder` true = unlock 0xFE (the commitment holder's share), false = 0xFF.
 * Once both blocks are zeroed the contract checks no output: whoever settles second takes the
 * TLCs still in the cell, so a side takes its share first only when it has no TLC left to claim
 * (the watchtower's rule, `watchtower/settle.ts`).
 * Refuses to build a continuation cell below its occupied capacity — the case where the other
 * side must settle first (see the settlement floor in docs/protocol.md).
 */
export function partySettlementTx(a: {
  cell: { outPoint: ccc.OutPointLike; output: ccc.CellOutputLike };
  script: Uint8Array;
  holder: boolean;
  settleKey: Uint8Array;
  to: ccc.ScriptLike;
  fee: bigint;
  cellDeps: ccc.CellDepLike[];
  delayEpoch: bigint;
}): ccc.Transaction {
  const out = ccc.CellOutput.from(a.cell.output);
  const args = ccc.bytesFrom(out.lock.args);
  const first = args[56] === 0;
  const c = a.script[0] as number;
  const P = 1 + 85 * c;
  const party = a.script.subarray(P, P + 72);
  const mine = a.holder ? party.subarray(0, 36) : party.subarray(36, 72);
  const other = a.holder ? party.subarray(36, 72) : party.subarray(0, 36);
  const myAmount = ccc.numLeFromBytes(mine.subarray(20, 36));
  const otherSettled = other.every((b) => b === 0);
  const remaining = out.capacity > myAmount ? out.capacity - myAmount : 0n;
  const zeros = new Uint8Array(36);
  const newScript = concat(
    a.script.subarray(0, P),
    a.holder ? zeros : party.subarray(0, 36),
    a.holder ? party.subarray(36, 72) : zeros,
  );
  const outputs: ccc.CellOutputLike[] = [];
  const data: ccc.HexLike[] = [];
  let payout = out.capacity;
  if (remaining > 0n && !otherSettled) {
    const cont = ccc.CellOutput.from({
      capacity: remaining,
      lock: {
        codeHash: out.lock.codeHash,
        hashType: out.lock.hashType,
        args: concat(args.subarray(0, 36), blake160(newScript), new Uint8Array([1])),
      },
    });
    if (BigInt(cont.occupiedSize) * CKB > remaining) {
      throw new Error(
        `the remaining ${remaining} shannons cannot stand as a commitment cell (${cont.occupiedSize} CKB occupied); the other side must settle first`,
      );
    }
    outputs.push(cont);
    data.push('0x');
    payout = out.capacity - remaining;
  }
  outputs.push({ capacity: payout - a.fee, lock: a.to });
  data.push('0x');
  const tx = ccc.Transaction.from({
    version: 0,
    cellDeps: a.cellDeps,
    inputs: [{ previousOutput: a.cell.outPoint, since: first ? delaySince(a.delayEpoch) : 0n }],
    outputs,
    outputsData: data,
  });
  const sig = signRecoverable(txMessage(tx), a.settleKey);
  tx.witnesses = [
    ccc.hexFrom(concat(XW, new Uint8Array([1]), a.script, new Uint8Array([a.holder ? 0xfe : 0xff, 0]), sig)),
  ];
  return tx;
}

/** Size in a block of the cooperative close tx (two outputs, 112-byte witness). */
export function shutdownTxSize(
  depCount: number,
  scripts: ccc.ScriptLike[],
  udt?: ccc.ScriptLike | null,
): number {
  return mockTxSize(depCount, {
    outputs: scripts.map((lock) => ({ capacity: 0n, lock, type: udt ?? undefined })),
    outputsData: scripts.map(() => (udt ? new Uint8Array(16) : '0x')),
    witnesses: [new Uint8Array(112)],
  });
}

export interface CloseSide {
  fundingPubkey: Uint8Array;
  closeScript: ccc.ScriptLike;
  /** Balance + reserve − fee share (CKB), or reserve − fee (UDT). */
  capacity: bigint;
  udtAmount?: bigint;
}

/** The cooperative close tx: outputs ordered like the sorted funding keys. */
export function shutdownTx(a: {
  fundingOutPoint: ccc.OutPointLike;
  cellDeps: ccc.CellDepLike[];
  sides: [CloseSide, CloseSide];
  udt?: ccc.ScriptLike | null;
}): ccc.Transaction {
  const [x, y] = a.sides;
  const ordered = Buffer.compare(x.fundingPubkey, y.fundingPubkey) <= 0 ? [x, y] : [y, x];
  return ccc.Transaction.from({
    version: 0,
    cellDeps: a.cellDeps,
    inputs: [{ previousOutput: a.fundingOutPoint, since: 0n }],
    outputs: ordered.map((s) => ({ capacity: s.capacity, lock: s.closeScript, type: a.udt ?? undefined })),
    outputsData: ordered.map((s) => (a.udt ? le128(s.udtAmount ?? 0n) : '0x')),
  });
}
