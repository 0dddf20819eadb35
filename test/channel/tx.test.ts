/**
 * Channel transactions built by `src/channel/tx.ts`, signed by the two parties' MuSig2 sessions
 * (`src/channel/musig.ts`), and checked by the dev chain's native script verifiers.
 */
import { ccc } from '@ckb-ccc/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { commitmentPoint, deriveChannelKeys } from '../../src/channel/keys.ts';
import { complete, newNonce, signFirst, sorted2 } from '../../src/channel/musig.ts';
import { reserveFor } from '../../src/channel/reserve.ts';
import {
  CKB,
  commitmentLockArgs,
  commitmentTx,
  commitmentTxSize,
  feeOf,
  fundingLockScript,
  fundingWitness,
  partySettlementTx,
  revocationMessage,
  revocationWitness,
  type SettlementTlc,
  settlementScript,
  shutdownTx,
  shutdownTxSize,
  txMessage,
} from '../../src/channel/tx.ts';
import { bytesToHex } from '../../src/codec/hex.ts';
import { blake160 } from '../../src/crypto/hash.ts';
import { ChainTxError } from '../../src/devchain/errors.ts';
import {
  buildTx,
  cellsOf,
  KEY_A,
  KEY_B,
  lockOf,
  openTestChain,
  type TestChain,
} from '../devchain/helpers.ts';

const hex = (b: Uint8Array) => bytesToHex(b, false);
const A = deriveChannelKeys(new Uint8Array(32).fill(0x11));
const B = deriveChannelKeys(new Uint8Array(32).fill(0x22));
const DELAY = 0x0000010000000001n;

describe('reference vectors (§9) and sizes', () => {
  it("reserve with a Strand peer is 62 CKB for a default lock (the seed), 98+1 only with 57-byte args; fnn's is 99 either way", () => {
    expect(reserveFor(lockOf(KEY_A), null, 'strand')).toBe(62n * CKB);
    expect(reserveFor({ ...lockOf(KEY_A), args: new Uint8Array(57) }, null, 'strand')).toBe(99n * CKB);
    expect(reserveFor(lockOf(KEY_A), null, 'fnn')).toBe(99n * CKB);
    expect(reserveFor({ ...lockOf(KEY_A), args: new Uint8Array(57) }, null, 'fnn')).toBe(99n * CKB);
    // Longer args than the commitment lock's count as they are under both rules.
    expect(reserveFor({ ...lockOf(KEY_A), args: new Uint8Array(60) }, null, 'fnn')).toBe(102n * CKB);
  });

  it('commitment tx size is 456 with two cell deps, as the reference computes', () => {
    const info = { codeHash: `0x${'00'.repeat(32)}`, hashType: 'type' as const, cellDeps: [] };
    expect(commitmentTxSize(2, info)).toBe(456);
    expect(commitmentTxSize(3, info)).toBe(493);
    expect(shutdownTxSize(2, [lockOf(KEY_A), lockOf(KEY_B)])).toBe(528);
  });

  it("A's v1 commitment: settlement script and 57-byte args", () => {
    const script = settlementScript([], {
      holderPkh: blake160(A.tlcBasepoint),
      holderAmount: 500n * CKB,
      otherPkh: blake160(B.tlcBasepoint),
      otherAmount: 99n * CKB,
    });
    expect(hex(script)).toBe(
      '00ccd9ec30b6a5cb7c756a037476d290ae61db7d5a00743ba40b0000000000000000000000e09346d53d9b095fce9e935767e43d9e95e723f10003164e020000000000000000000000',
    );
    const args = commitmentLockArgs([B.fundingPubkey, A.fundingPubkey], DELAY, 1n, script);
    expect(hex(args)).toBe(
      'f02439412ed0ae64e353b1f1991f70fb9ba96b6201000000000100a0000000000000000181703b3a8336bd05a3d7812b8ffc95d5fff73d4600',
    );
    const info = { codeHash: `0x${'00'.repeat(32)}`, hashType: 'type' as const, cellDeps: [] };
    expect(ccc.hexFrom(fundingLockScript(info, B.fundingPubkey, A.fundingPubkey).args)).toBe(
      '0x71f4c7e96c5b93362dbb3172bf58783981942265',
    );
    expect(hex(commitmentPoint(A.commitmentSeed, 2n))).toBe(
      '02b4804a92871ce10bfb21c662159ec626166c8ae1bcdf39b4d567339177b79b95',
    );
  });
});

describe('on the dev chain', () => {
  let t: TestChain;
  beforeEach(() => {
    t = openTestChain();
  });
  afterEach(() => t.close());

  const send = (tx: ccc.Transaction) => t.chain.sendTransaction(tx);
  const code = (tx: ccc.Transaction) => {
    try {
      send(tx);
      return 0;
    } catch (e) {
      if (!(e instanceof ChainTxError)) throw e;
      return Number(/error code (-?\d+)/.exec(e.message)?.[1] ?? -999);
    }
  };

  /** A funding cell of `capacity` under the two parties' funding lock, committed. */
  function fundingCell(capacity: bigint) {
    const lock = fundingLockScript(t.chain.scripts.funding_lock, A.fundingPubkey, B.fundingPubkey);
    const cell = cellsOf(t.chain, lockOf(KEY_A))[0]!;
    const tx = buildTx(t.chain, {
      inputs: [{ cell }],
      outputs: [
        { lock, capacity },
        { lock: lockOf(KEY_A), capacity: cell.output.capacity - capacity - 2000n },
      ],
      keys: [KEY_A],
    });
    const hash = send(tx);
    t.chain.generateBlock();
    return { txHash: hash, index: 0 };
  }

  /** A's commitment (holder A), with amounts incl. reserves, fully signed by B then A. */
  function signedCommitment(
    outPoint: ccc.OutPointLike,
    holderAmount: bigint,
    otherAmount: bigint,
    version: bigint,
    tlcs: SettlementTlc[] = [],
  ) {
    const info = t.chain.scripts.commitment_lock;
    const fee = feeOf(1000n, commitmentTxSize(t.chain.scripts.funding_lock.cellDeps.length, info));
    const pending = tlcs.reduce((n, x) => n + x.amount, 0n);
    const script = settlementScript(tlcs, {
      holderPkh: blake160(A.tlcBasepoint),
      holderAmount,
      otherPkh: blake160(B.tlcBasepoint),
      otherAmount,
    });
    const revKeys = [B.fundingPubkey, A.fundingPubkey];
    const args = commitmentLockArgs(revKeys, DELAY, version, script);
    const tx = commitmentTx({
      fundingOutPoint: outPoint,
      commitmentLock: info,
      args,
      capacity: holderAmount + otherAmount + pending - fee,
    });
    const keys = sorted2(A.fundingPubkey, B.fundingPubkey);
    const msg = txMessage(tx);
    const aNonce = newNonce(A.fundingPubkey, A.fundingKey); // advertised by A, the completer
    const b = signFirst(B.fundingKey, aNonce.public, keys, msg);
    const sig = complete({
      mySecret: A.fundingKey,
      myPubkey: A.fundingPubkey,
      myNonce: aNonce,
      theirPubkey: B.fundingPubkey,
      theirNonce: b.nonce,
      theirPartial: b.partial,
      keys,
      msg,
    });
    // Deps are added at broadcast; the signature does not cover them.
    tx.cellDeps = t.chain.scripts.funding_lock.cellDeps.map((d) => ccc.CellDep.from(d));
    tx.witnesses = [fundingWitness(A.fundingPubkey, B.fundingPubkey, sig)];
    return { tx, script, args, revKeys, fee };
  }

  it('a commitment signed by both passes the funding lock; a forged partial is refused', () => {
    const op = fundingCell(750n * CKB);
    const { tx } = signedCommitment(op, 500n * CKB, 250n * CKB, 1n);
    const keys = sorted2(A.fundingPubkey, B.fundingPubkey);
    const aNonce = newNonce(A.fundingPubkey, A.fundingKey);
    const other = signFirst(B.fundingKey, aNonce.public, keys, new Uint8Array(32));
    expect(() =>
      complete({
        mySecret: A.fundingKey,
        myPubkey: A.fundingPubkey,
        myNonce: aNonce,
        theirPubkey: B.fundingPubkey,
        theirNonce: other.nonce,
        theirPartial: other.partial,
        keys,
        msg: txMessage(tx),
      }),
    ).toThrow(/does not verify/);
    expect(code(tx)).toBe(0);
  });

  it('an old commitment on chain is revoked by the signature over a newer version', () => {
    const op = fundingCell(750n * CKB);
    const c = signedCommitment(op, 500n * CKB, 250n * CKB, 1n);
    const commitHash = send(c.tx);
    t.chain.generateBlock();
    // A revoked v1 when moving to v2: it signed first, B (who holds the result) completes.
    const capacity = c.tx.outputs[0]!.capacity;
    const out = ccc.CellOutput.from({ capacity: capacity - 1000n, lock: lockOf(KEY_B) });
    const msg = revocationMessage(out, new Uint8Array(0), c.args, 1n);
    const bNonce = newNonce(B.fundingPubkey, B.fundingKey);
    const a = signFirst(A.fundingKey, bNonce.public, c.revKeys, msg);
    const sig = complete({
      mySecret: B.fundingKey,
      myPubkey: B.fundingPubkey,
      myNonce: bNonce,
      theirPubkey: A.fundingPubkey,
      theirNonce: a.nonce,
      theirPartial: a.partial,
      keys: c.revKeys,
      msg,
    });
    const revoke = ccc.Transaction.from({
      version: 0,
      cellDeps: t.chain.scripts.commitment_lock.cellDeps,
      inputs: [{ previousOutput: { txHash: commitHash, index: 0 }, since: 0n }],
      outputs: [out],
      outputsData: ['0x'],
      witnesses: [revocationWitness(c.revKeys, 1n, sig)],
    });
    expect(code(revoke)).toBe(0);
  });

  it('settlement after the delay: never a cell below its occupied capacity (one side at zero)', () => {
    const op = fundingCell(750n * CKB);
    // A holds 626 + 62, B holds 0 + 62 (its reserve only).
    const c = signedCommitment(op, 688n * CKB, 62n * CKB, 1n);
    const commitHash = send(c.tx);
    t.chain.generateBlock();
    for (let i = 0; i < 12; i++) t.chain.generateBlock();
    const cell = { outPoint: { txHash: commitHash, index: 0 }, output: c.tx.outputs[0]! };
    const deps = t.chain.scripts.commitment_lock.cellDeps;
    const base = { cell, script: c.script, fee: 1000n, cellDeps: deps, delayEpoch: DELAY };
    // A first would leave 62 CKB − fee under a 57-byte-args lock (98 CKB occupied): refused.
    expect(() =>
      partySettlementTx({ ...base, holder: true, settleKey: A.tlcBaseKey, to: lockOf(KEY_A) }),
    ).toThrow(/other side must settle first/);
    // B settles first: its 62 CKB (minus fee) to B; A's share stays, with B's block zeroed.
    const bTx = partySettlementTx({ ...base, holder: false, settleKey: B.tlcBaseKey, to: lockOf(KEY_B) });
    expect(bTx.outputs[0]!.capacity).toBe(750n * CKB - c.fee - 62n * CKB);
    expect(bTx.outputs[1]!.capacity).toBe(62n * CKB - 1000n);
    // Signed by A's key instead: refused by the lock (auth error 22).
    const forged = partySettlementTx({ ...base, holder: false, settleKey: A.tlcBaseKey, to: lockOf(KEY_B) });
    expect(code(forged)).toBe(22);
    const bHash = send(bTx);
    t.chain.generateBlock();
    const rest = {
      outPoint: { txHash: bHash, index: 0 },
      output: bTx.outputs[0]!,
    };
    const newScript = ccc.bytesFrom(c.script).slice();
    newScript.fill(0, 37, 73);
    const aTx = partySettlementTx({
      ...base,
      cell: rest,
      script: newScript,
      holder: true,
      settleKey: A.tlcBaseKey,
      to: lockOf(KEY_A),
    });
    expect(aTx.outputs).toHaveLength(1);
    expect(code(aTx)).toBe(0);
  });

  it('a side takes its share with a TLC pending: the continuation keeps the TLC', () => {
    const op = fundingCell(850n * CKB);
    // A (the holder) offered B a 100-CKB TLC; A holds 526 + 62, B 100 + 62.
    const tlc: SettlementTlc = {
      offeredByHolder: true,
      hashAlgorithm: 0,
      amount: 100n * CKB,
      paymentHash: new Uint8Array(32).fill(0x77),
      holderKeyHash: blake160(A.tlcBasepoint),
      otherKeyHash: blake160(B.tlcBasepoint),
      expiry: 1_900_000_000_000n,
    };
    const c = signedCommitment(op, 588n * CKB, 162n * CKB, 1n, [tlc]);
    const commitHash = send(c.tx);
    for (let i = 0; i < 13; i++) t.chain.generateBlock();
    const bTx = partySettlementTx({
      cell: { outPoint: { txHash: commitHash, index: 0 }, output: c.tx.outputs[0]! },
      script: c.script,
      holder: false,
      settleKey: B.tlcBaseKey,
      to: lockOf(KEY_B),
      fee: 1000n,
      cellDeps: t.chain.scripts.commitment_lock.cellDeps,
      delayEpoch: DELAY,
    });
    // The TLC and A's share stay locked; the new script keeps the TLC entry, B's block zeroed.
    const kept = ccc.bytesFrom(c.script).slice();
    kept.fill(0, 1 + 85 + 36);
    expect(bTx.outputs[0]!.capacity).toBe(688n * CKB - c.fee);
    expect(hex(ccc.bytesFrom(bTx.outputs[0]!.lock.args).subarray(36, 56))).toBe(hex(blake160(kept)));
    expect(bTx.outputs[1]!.capacity).toBe(162n * CKB - 1000n);
    expect(code(bTx)).toBe(0);
  });

  it('cooperative close pays each side balance + reserve − its fee, ordered by funding key', () => {
    const op = fundingCell(750n * CKB);
    const keys = sorted2(A.fundingPubkey, B.fundingPubkey);
    const tx = shutdownTx({
      fundingOutPoint: op,
      cellDeps: t.chain.scripts.funding_lock.cellDeps,
      sides: [
        { fundingPubkey: A.fundingPubkey, closeScript: lockOf(KEY_A), capacity: 500n * CKB - 600n },
        { fundingPubkey: B.fundingPubkey, closeScript: lockOf(KEY_B), capacity: 250n * CKB },
      ],
    });
    const msg = txMessage(tx);
    const aNonce = newNonce(A.fundingPubkey, A.fundingKey);
    const b = signFirst(B.fundingKey, aNonce.public, keys, msg);
    const sig = complete({
      mySecret: A.fundingKey,
      myPubkey: A.fundingPubkey,
      myNonce: aNonce,
      theirPubkey: B.fundingPubkey,
      theirNonce: b.nonce,
      theirPartial: b.partial,
      keys,
      msg,
    });
    tx.witnesses = [fundingWitness(A.fundingPubkey, B.fundingPubkey, sig)];
    expect(code(tx)).toBe(0);
    expect(ccc.hexFrom(tx.outputs[0]!.lock.args)).toBe(ccc.hexFrom(lockOf(KEY_A).args));
  });
});
