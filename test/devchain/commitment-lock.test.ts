/**
 * The commitment lock verifier driven directly (no chain): the non-holder's party unlock, the
 * second party after the first, UDT cells, TLC ordering, and random witnesses.
 */
import { ccc } from '@ckb-ccc/core';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { blake160, ckbHash } from '../../src/crypto/hash.ts';
import { signRecoverable } from '../../src/crypto/secp256k1.ts';
import { CL_ERR, commitmentLock } from '../../src/devchain/scripts/commitment-lock.ts';
import { EMPTY_WITNESS_ARGS, makeTxContext } from '../../src/devchain/scripts/context.ts';

const CKB = 100_000_000n;
const cat = (...p: Uint8Array[]) => Uint8Array.from(Buffer.concat(p));
const le128 = (v: bigint) => ccc.numLeToBytes(v, 16);
const pkh = (sk: Uint8Array) => blake160(secp256k1.getPublicKey(sk, true));
const setA = new Uint8Array(32).fill(0x41);
const setB = new Uint8Array(32).fill(0x42);
const DELAY = 0xa000010000000001n;
const CODE = `0x${'c0'.repeat(32)}`;
const UDT = ccc.Script.from({
  codeHash: `0x${'d0'.repeat(32)}`,
  hashType: 'data2',
  args: `0x${'01'.repeat(32)}`,
});

const party = (a: bigint, b: bigint) => cat(pkh(setA), le128(a), pkh(setB), le128(b));
const argsFor = (script: Uint8Array, flag: number) =>
  cat(
    new Uint8Array(20).fill(9),
    ccc.numLeToBytes(DELAY, 8),
    ccc.numBeToBytes(3n, 8),
    blake160(script),
    new Uint8Array([flag]),
  );
const lock = (a: Uint8Array) => ccc.Script.from({ codeHash: CODE, hashType: 'data2', args: a });

interface Case {
  script: Uint8Array;
  flag: number;
  capacity: bigint;
  udt?: bigint;
  since?: bigint;
  outputs: ccc.CellOutputLike[];
  outputsData: ccc.HexLike[];
  entry: (msg: Uint8Array) => Uint8Array;
}

function run(c: Case): number {
  const inLock = lock(argsFor(c.script, c.flag));
  const tx = ccc.Transaction.from({
    version: 0,
    inputs: [{ previousOutput: { txHash: `0x${'11'.repeat(32)}`, index: 0 }, since: c.since ?? DELAY }],
    outputs: c.outputs,
    outputsData: c.outputsData,
  });
  const msg = (() => {
    const x = tx.clone();
    x.cellDeps = [];
    return ckbHash(x.rawToBytes());
  })();
  tx.witnesses = [ccc.hexFrom(cat(EMPTY_WITNESS_ARGS, new Uint8Array([1]), c.script, c.entry(msg)))];
  const ctx = makeTxContext(tx, [
    {
      outPoint: ccc.OutPoint.from({ txHash: `0x${'11'.repeat(32)}`, index: 0 }),
      output: ccc.CellOutput.from({
        capacity: c.capacity,
        lock: inLock,
        type: c.udt === undefined ? undefined : UDT,
      }),
      data: c.udt === undefined ? new Uint8Array() : le128(c.udt),
    },
  ]);
  return commitmentLock.verify(ctx, { script: inLock, kind: 'lock', inputIndices: [0], outputIndices: [] });
}

const partyEntry = (t: number, sk: Uint8Array) => (msg: Uint8Array) =>
  cat(new Uint8Array([t, 0]), signRecoverable(msg, sk));
const sighashOut = (capacity: bigint) => ({
  capacity,
  lock: { codeHash: `0x${'00'.repeat(32)}`, hashType: 'data', args: '0x' },
});

describe('commitment lock, party unlocks', () => {
  const script = cat(new Uint8Array([0]), party(300n * CKB, 200n * CKB));
  const CAP = 500n * CKB - 456n;

  it('the non-holder (0xFF) takes its share; the continuation keeps the holder block', () => {
    const next = cat(new Uint8Array([0]), party(300n * CKB, 200n * CKB).subarray(0, 36), new Uint8Array(36));
    const cont = {
      capacity: CAP - 200n * CKB,
      lock: lock(cat(argsFor(script, 0).subarray(0, 36), blake160(next), new Uint8Array([1]))),
    };
    const base = {
      script,
      flag: 0,
      capacity: CAP,
      outputs: [cont, sighashOut(199n * CKB)],
      outputsData: ['0x', '0x'],
    };
    expect(run({ ...base, entry: partyEntry(0xff, setB) })).toBe(0);
    expect(run({ ...base, entry: partyEntry(0xff, setA) })).toBe(CL_ERR.AuthError);
    expect(run({ ...base, entry: partyEntry(0xfe, setA) })).toBe(CL_ERR.OutputLockError);
    const wrongCap = { ...base, outputs: [{ ...cont, capacity: CAP - 199n * CKB }, sighashOut(198n * CKB)] };
    expect(run({ ...wrongCap, entry: partyEntry(0xff, setB) })).toBe(CL_ERR.OutputCapacityError);
  });

  it('after one side settled (flag 1), the other settles with no delay and no continuation', () => {
    const settled = cat(new Uint8Array([0]), new Uint8Array(36), pkh(setB), le128(200n * CKB));
    const c = {
      script: settled,
      flag: 1,
      since: 0n,
      capacity: 200n * CKB - 456n,
      outputs: [sighashOut(200n * CKB - 2000n)],
      outputsData: ['0x'],
    };
    expect(run({ ...c, entry: partyEntry(0xff, setB) })).toBe(0);
    expect(run({ ...c, entry: partyEntry(0xff, setA) })).toBe(CL_ERR.AuthError);
  });

  it('a fresh commitment (flag 0) needs the full delay for a party unlock', () => {
    const next = cat(new Uint8Array([0]), new Uint8Array(36), party(300n * CKB, 200n * CKB).subarray(36));
    const cont = {
      capacity: CAP - 300n * CKB,
      lock: lock(cat(argsFor(script, 0).subarray(0, 36), blake160(next), new Uint8Array([1]))),
    };
    const c = {
      script,
      flag: 0,
      capacity: CAP,
      outputs: [cont, sighashOut(299n * CKB)],
      outputsData: ['0x', '0x'],
      entry: partyEntry(0xfe, setA),
    };
    expect(run(c)).toBe(0);
    expect(run({ ...c, since: 0xa000030002000000n })).toBe(CL_ERR.InvalidSince); // 2/3 epoch
    expect(run({ ...c, since: 0x2000010000000001n })).toBe(CL_ERR.InvalidSince); // absolute, not relative
  });

  it('UDT cells: the continuation keeps the type and the remaining amount', () => {
    const next = cat(new Uint8Array([0]), new Uint8Array(36), party(300n, 200n).subarray(36));
    const s = cat(new Uint8Array([0]), party(300n, 200n));
    const cont = (type: ccc.Script | undefined) => ({
      capacity: 150n * CKB,
      lock: lock(cat(argsFor(s, 0).subarray(0, 36), blake160(next), new Uint8Array([1]))),
      type,
    });
    const base = { script: s, flag: 0, capacity: 300n * CKB, udt: 500n, entry: partyEntry(0xfe, setA) };
    expect(
      run({ ...base, outputs: [cont(UDT), sighashOut(149n * CKB)], outputsData: [le128(200n), '0x'] }),
    ).toBe(0);
    expect(
      run({ ...base, outputs: [cont(UDT), sighashOut(149n * CKB)], outputsData: [le128(201n), '0x'] }),
    ).toBe(CL_ERR.OutputUdtAmountError);
    expect(
      run({ ...base, outputs: [cont(undefined), sighashOut(149n * CKB)], outputsData: [le128(200n), '0x'] }),
    ).toBe(CL_ERR.OutputTypeError);
  });

  it('rejects unlock entries for unknown indexes, bad preimage flags, and two party entries', () => {
    const base = { script, flag: 0, capacity: CAP, outputs: [sighashOut(CAP - 1000n)], outputsData: ['0x'] };
    expect(run({ ...base, entry: (m) => cat(new Uint8Array([3, 0]), signRecoverable(m, setA)) })).toBe(
      CL_ERR.InvalidUnlockType,
    );
    expect(run({ ...base, entry: (m) => cat(new Uint8Array([0xfe, 2]), signRecoverable(m, setA)) })).toBe(
      CL_ERR.InvalidWithPreimageFlag,
    );
    expect(run({ ...base, entry: (m) => cat(partyEntry(0xfe, setA)(m), partyEntry(0xff, setB)(m)) })).toBe(
      CL_ERR.InvalidSettlementCount,
    );
    expect(run({ ...base, entry: () => new Uint8Array() })).toBe(CL_ERR.InvalidSettlementCount);
  });

  it('random witnesses never throw and never unlock', () => {
    const inLock = lock(argsFor(script, 0));
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 400 }), fc.boolean(), (body, prefixed) => {
        const tx = ccc.Transaction.from({
          version: 0,
          inputs: [{ previousOutput: { txHash: `0x${'11'.repeat(32)}`, index: 0 }, since: DELAY }],
          outputs: [sighashOut(CAP - 1000n)],
          outputsData: ['0x'],
          witnesses: [ccc.hexFrom(prefixed ? cat(EMPTY_WITNESS_ARGS, body) : body)],
        });
        const ctx = makeTxContext(tx, [
          {
            outPoint: ccc.OutPoint.from({ txHash: `0x${'11'.repeat(32)}`, index: 0 }),
            output: ccc.CellOutput.from({ capacity: CAP, lock: inLock }),
            data: new Uint8Array(),
          },
        ]);
        expect(
          commitmentLock.verify(ctx, { script: inLock, kind: 'lock', inputIndices: [0], outputIndices: [] }),
        ).not.toBe(0);
      }),
      { numRuns: 500 },
    );
  });
});
