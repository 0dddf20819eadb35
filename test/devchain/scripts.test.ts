import { ccc } from '@ckb-ccc/core';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { blake160, ckbHash, sha256 } from '../../src/crypto/hash.ts';
import { aggregateXOnly, signTogether, sortPubkeys } from '../../src/crypto/musig2.ts';
import { signRecoverable } from '../../src/crypto/secp256k1.ts';
import { signSighashAll } from '../../src/crypto/sighash.ts';
import { ChainTxError } from '../../src/devchain/errors.ts';
import { mulDelay } from '../../src/devchain/scripts/commitment-lock.ts';
import { EMPTY_WITNESS_ARGS } from '../../src/devchain/scripts/context.ts';
import { encodeSince } from '../../src/devchain/since.ts';
import type { ViewCell } from '../../src/devchain/validate.ts';
import {
  buildTx,
  CKB,
  cellsOf,
  KEY_A,
  KEY_B,
  lockOf,
  openTestChain,
  type TestChain,
  udtCellsOf,
  udtData,
} from './helpers.ts';

let t: TestChain;
beforeEach(() => {
  t = openTestChain();
});
afterEach(() => t.close());

/** The exit code of the failing script, or 0 when accepted. */
function exitCode(tx: ccc.Transaction): number {
  try {
    t.chain.sendTransaction(tx);
    return 0;
  } catch (e) {
    if (!(e instanceof ChainTxError)) throw e;
    const m = /see error code (-?\d+)/.exec(e.message);
    if (!m) throw e;
    return Number(m[1]);
  }
}

const cat = (...p: Uint8Array[]) => Uint8Array.from(Buffer.concat(p));
const hex = (b: Uint8Array) => ccc.hexFrom(b);
const le128 = (v: bigint) => ccc.numLeToBytes(v, 16);
const be64 = (v: bigint) => ccc.numBeToBytes(v, 8);
/** M(tx): the hash of the raw transaction with its cell deps emptied. */
const msgOf = (tx: ccc.Transaction) => {
  const c = tx.clone();
  c.cellDeps = [];
  return ckbHash(c.rawToBytes());
};

/** Moves `capacity` from A into a new cell with `lock`, commits it, returns the cell. */
function fund(
  lock: ccc.ScriptLike,
  capacity: bigint,
  type?: ccc.ScriptLike,
  data: ccc.HexLike = '0x',
): ViewCell {
  const cell = cellsOf(t.chain, lockOf(KEY_A))[0] as ViewCell;
  const udtDeps = type ? t.chain.scripts.simple_udt.cellDeps : [];
  let inputs = [{ cell }];
  const outputs: { lock: ccc.ScriptLike; capacity: bigint; type?: ccc.ScriptLike; data?: ccc.HexLike }[] = [
    { lock, capacity, type, data },
  ];
  let rest = cell.output.capacity - capacity - 1000n;
  if (type) {
    const u = udtCellsOf(t.chain, lockOf(KEY_A))[0] as ViewCell;
    inputs = [{ cell }, { cell: u }];
    rest += u.output.capacity;
    outputs.push({
      lock: lockOf(KEY_A),
      capacity: 0n,
      type,
      data: udtData(1000n - ccc.numLeFromBytes(ccc.bytesFrom(data).slice(0, 16))),
    });
    (outputs[1] as { capacity: bigint }).capacity = 142n * CKB;
    rest -= 142n * CKB;
  }
  outputs.push({ lock: lockOf(KEY_A), capacity: rest });
  const tx = buildTx(t.chain, {
    inputs,
    outputs,
    keys: [KEY_A],
    cellDeps: [...t.chain.scripts.secp256k1_blake160_sighash_all.cellDeps, ...udtDeps],
  });
  const hash = t.chain.sendTransaction(tx);
  t.chain.generateBlock();
  return t.chain.liveCell({ txHash: hash, index: 0 }) as ViewCell;
}

describe('secp256k1-blake160 sighash-all', () => {
  const spend = (key: Uint8Array) => {
    const cell = cellsOf(t.chain, lockOf(KEY_A))[0] as ViewCell;
    return buildTx(t.chain, {
      inputs: [{ cell }],
      outputs: [{ lock: lockOf(KEY_B), capacity: cell.output.capacity - 1000n }],
      keys: [key],
    });
  };

  it('accepts the owner signature', () => {
    expect(exitCode(spend(KEY_A))).toBe(0);
  });

  it('rejects a signature by another key (-31)', () => {
    const tx = spend(KEY_A);
    const forged = spend(KEY_B); // signs nothing: B owns no input here
    expect(forged.witnesses).toEqual([]);
    const other = buildTx(t.chain, {
      inputs: [{ cell: cellsOf(t.chain, lockOf(KEY_A))[0] as ViewCell }],
      outputs: [{ lock: lockOf(KEY_B), capacity: 1000n * CKB }],
    });
    // Sign A's input with B's key by pretending B owns it.
    const w = ccc.WitnessArgs.from({ lock: hex(new Uint8Array(65)) });
    other.witnesses = [hex(w.toBytes())];
    const sig = signRecoverable(new Uint8Array(32).fill(1), KEY_B);
    other.witnesses = [hex(ccc.WitnessArgs.from({ lock: hex(sig) }).toBytes())];
    expect(exitCode(other)).not.toBe(0);
    expect(exitCode(tx)).toBe(0);
  });

  it('rejects a transaction changed after signing', () => {
    const tx = spend(KEY_A);
    (tx.outputs[0] as ccc.CellOutput).lock = lockOf(KEY_A);
    expect([-31, -11]).toContain(exitCode(tx));
  });

  it('rejects a missing or malformed witness', () => {
    const tx = spend(KEY_A);
    const noWitness = tx.clone();
    noWitness.witnesses = [];
    expect(exitCode(noWitness)).toBe(-3);
    const raw = tx.clone();
    raw.witnesses = ['0x1234'];
    expect(exitCode(raw)).toBe(-2);
    const short = tx.clone();
    short.witnesses = [hex(ccc.WitnessArgs.from({ lock: '0x00' }).toBytes())];
    expect(exitCode(short)).toBe(-1);
  });
});

// The test UDT (A and B hold 1000 from the chain's creation) and the test xUDT (issued to each by
// the faucet first): both owned by the faucet lock, both checked the same way on transfer.
describe.each([
  { name: 'test UDT (simple UDT)', xudt: false },
  { name: 'test xUDT', xudt: true },
])('$name', ({ xudt }) => {
  const token = () => (xudt ? t.chain.scripts.test_xudt : t.chain.scripts.test_udt);
  const code = () => (xudt ? t.chain.scripts.xudt : t.chain.scripts.simple_udt);
  const issue = (lock: ccc.Script, amount: bigint) =>
    xudt ? t.chain.faucet(lock, 1000n * CKB, 0n, amount) : t.chain.faucet(lock, 1000n * CKB, amount);
  const tokenCells = (sk: Uint8Array) =>
    udtCellsOf(t.chain, lockOf(sk)).filter((c) => c.output.type?.eq(ccc.Script.from(token())));
  const deps = () => [...t.chain.scripts.secp256k1_blake160_sighash_all.cellDeps, ...code().cellDeps];
  beforeEach(() => {
    if (!xudt) return;
    issue(lockOf(KEY_A), 1000n);
    issue(lockOf(KEY_B), 1000n);
    t.chain.generateBlock();
  });
  const transfer = (outAmounts: bigint[], data?: ccc.Hex) => {
    const u = tokenCells(KEY_A)[0] as ViewCell;
    const c = cellsOf(t.chain, lockOf(KEY_A))[0] as ViewCell;
    return buildTx(t.chain, {
      inputs: [{ cell: u }, { cell: c }],
      outputs: [
        ...outAmounts.map((a) => ({
          lock: lockOf(KEY_B),
          capacity: 142n * CKB,
          type: token(),
          data: data ?? udtData(a),
        })),
        {
          lock: lockOf(KEY_A),
          capacity: c.output.capacity + u.output.capacity - 142n * CKB * BigInt(outAmounts.length) - 2000n,
        },
      ],
      keys: [KEY_A],
      cellDeps: deps(),
    });
  };

  it('accepts a transfer that conserves the amount', () => {
    expect(tokenCells(KEY_A).map((c) => ccc.numLeFromBytes(c.data.subarray(0, 16)))).toEqual([1000n]);
    expect(exitCode(transfer([400n, 600n]))).toBe(0);
  });

  it('rejects minting without the owner lock (-52)', () => {
    expect(exitCode(transfer([400n, 601n]))).toBe(-52);
  });

  it('rejects a token cell whose data is shorter than 16 bytes (-2)', () => {
    expect(exitCode(transfer([0n], '0x0102'))).toBe(-2);
  });

  it('lets the owner (the faucet lock) mint, several times before a block', () => {
    const hash = issue(lockOf(KEY_B), 5_000_000n);
    expect(t.chain.transaction(hash)?.status).toBe('pending');
    const second = issue(lockOf(KEY_A), 7n);
    t.chain.generateBlock();
    expect(t.chain.transaction(second)?.status).toBe('committed');
    expect(
      tokenCells(KEY_B)
        .map((c) => ccc.numLeFromBytes(c.data.subarray(0, 16)))
        .sort(),
    ).toEqual([1000n, 5_000_000n]);
  });
});

describe('xUDT args on the chain', () => {
  /** A mints `amount` of its own xUDT (args: A's lock hash + `flags`), spending a plain cell. */
  const mintOwn = (flags: string) => {
    const c = cellsOf(t.chain, lockOf(KEY_A))[0] as ViewCell;
    const type = { ...t.chain.scripts.test_xudt, args: ccc.hexFrom(`${lockOf(KEY_A).hash()}${flags}`) };
    return buildTx(t.chain, {
      inputs: [{ cell: c }],
      outputs: [
        { lock: lockOf(KEY_B), capacity: 200n * CKB, type, data: udtData(50n) },
        { lock: lockOf(KEY_A), capacity: c.output.capacity - 200n * CKB - 2000n },
      ],
      keys: [KEY_A],
      cellDeps: [
        ...t.chain.scripts.secp256k1_blake160_sighash_all.cellDeps,
        ...t.chain.scripts.xudt.cellDeps,
      ],
    });
  };

  it('lets an owner mint with flags 0 written out; 0x20000000 takes that owner mode away (-52)', () => {
    expect(exitCode(mintOwn('00000000'))).toBe(0);
    t.chain.generateBlock();
    expect(exitCode(mintOwn('00000020'))).toBe(-52);
  });

  it('refuses a token with extension scripts (44)', () => {
    expect(exitCode(mintOwn(`01000000${'04000000'}`))).toBe(44);
    expect(exitCode(mintOwn(`02000000${'ab'.repeat(20)}`))).toBe(44);
  });
});

describe('funding lock (MuSig2 2-of-2, BIP340)', () => {
  const skA = new Uint8Array(32).fill(0x21);
  const skB = new Uint8Array(32).fill(0x42);
  const keys = sortPubkeys([secp256k1.getPublicKey(skA, true), secp256k1.getPublicKey(skB, true)]);
  const xonly = aggregateXOnly(keys);
  const fundingLock = () => ({
    codeHash: t.chain.scripts.funding_lock.codeHash,
    hashType: t.chain.scripts.funding_lock.hashType,
    args: hex(blake160(xonly)),
  });
  const spendTx = (cell: ViewCell) =>
    ccc.Transaction.from({
      version: 0,
      cellDeps: t.chain.scripts.funding_lock.cellDeps,
      inputs: [{ previousOutput: cell.outPoint, since: 0n }],
      outputs: [{ lock: lockOf(KEY_B), capacity: cell.output.capacity - 1000n }],
      outputsData: ['0x'],
    });
  const witness = (sig: Uint8Array, key = xonly) => hex(cat(EMPTY_WITNESS_ARGS, key, sig));

  it('accepts the aggregate signature and rejects forged ones', () => {
    const cell = fund(fundingLock(), 500n * CKB);
    const tx = spendTx(cell);
    const sig = signTogether([skA, skB], keys, msgOf(tx));
    // Signed by a different pair of keys: the x-only key's hash does not match the args (8).
    const other = sortPubkeys([secp256k1.getPublicKey(skA, true), secp256k1.getPublicKey(KEY_B, true)]);
    const wrong = tx.clone();
    wrong.witnesses = [witness(signTogether([skA, KEY_B], other, msgOf(tx)), aggregateXOnly(other))];
    expect(exitCode(wrong)).toBe(8);
    // Right key, signature over another message (8).
    const stale = tx.clone();
    stale.witnesses = [witness(signTogether([skA, skB], keys, new Uint8Array(32)))];
    expect(exitCode(stale)).toBe(8);
    // Wrong length (6) and wrong prefix (7).
    const short = tx.clone();
    short.witnesses = [hex(cat(EMPTY_WITNESS_ARGS, xonly, sig.subarray(0, 63)))];
    expect(exitCode(short)).toBe(6);
    const prefix = tx.clone();
    prefix.witnesses = [hex(cat(new Uint8Array(16), xonly, sig))];
    expect(exitCode(prefix)).toBe(7);
    tx.witnesses = [witness(sig)];
    expect(exitCode(tx)).toBe(0);
  });

  it('ignores cell deps in the signed message, like the reference', () => {
    const cell = fund(fundingLock(), 500n * CKB);
    const tx = spendTx(cell);
    tx.cellDeps = [];
    const sig = signTogether([skA, skB], keys, msgOf(tx));
    tx.cellDeps = t.chain.scripts.funding_lock.cellDeps.map((d) => ccc.CellDep.from(d));
    tx.witnesses = [witness(sig)];
    expect(exitCode(tx)).toBe(0);
  });

  it('rejects two funding cells of the same lock in one transaction (5)', () => {
    const a = fund(fundingLock(), 500n * CKB);
    const b = fund(fundingLock(), 500n * CKB);
    const tx = ccc.Transaction.from({
      version: 0,
      cellDeps: t.chain.scripts.funding_lock.cellDeps,
      inputs: [
        { previousOutput: a.outPoint, since: 0n },
        { previousOutput: b.outPoint, since: 0n },
      ],
      outputs: [{ lock: lockOf(KEY_B), capacity: 999n * CKB }],
      outputsData: ['0x'],
    });
    const sig = signTogether([skA, skB], keys, msgOf(tx));
    tx.witnesses = [witness(sig), witness(sig)];
    expect(exitCode(tx)).toBe(5);
  });
});

describe('commitment lock', () => {
  // Holder H = A, non-holder = B. Funding keys, settlement (TLC base) keys and TLC keys.
  const fundA = new Uint8Array(32).fill(0x31);
  const fundB = new Uint8Array(32).fill(0x32);
  const setA = new Uint8Array(32).fill(0x33);
  const setB = new Uint8Array(32).fill(0x34);
  const tlcA = new Uint8Array(32).fill(0x35);
  const tlcB = new Uint8Array(32).fill(0x36);
  const pk = (sk: Uint8Array) => secp256k1.getPublicKey(sk, true);
  const pkh = (sk: Uint8Array) => blake160(pk(sk));
  const revKeys = [pk(fundB), pk(fundA)]; // [non-holder, holder], not sorted
  const revXonly = aggregateXOnly(revKeys);
  const DELAY = 0xa000010000000001n; // one epoch, relative
  const preimage = new Uint8Array(32).fill(0x77);
  const expirySecs = 1_700_000_100n;

  /** TLC offered by B to A (b = 0), sha256 hash, 50 CKB. */
  const tlc = () =>
    cat(
      new Uint8Array([(1 << 1) | 0]),
      le128(100n * CKB),
      sha256(preimage).subarray(0, 20),
      pkh(tlcA),
      pkh(tlcB),
      ccc.numLeToBytes(encodeSince({ relative: false, metric: 'timestamp', value: expirySecs }), 8),
    );
  const settlementScript = (withTlc: boolean) =>
    cat(
      new Uint8Array([withTlc ? 1 : 0]),
      ...(withTlc ? [tlc()] : []),
      pkh(setA),
      le128(300n * CKB),
      pkh(setB),
      le128(200n * CKB),
    );
  const args = (script: Uint8Array, version = 5n) =>
    cat(blake160(revXonly), ccc.numLeToBytes(DELAY, 8), be64(version), blake160(script), new Uint8Array([0]));
  const lockWith = (a: Uint8Array) => ({
    codeHash: t.chain.scripts.commitment_lock.codeHash,
    hashType: t.chain.scripts.commitment_lock.hashType,
    args: hex(a),
  });
  const deps = () => [
    ...t.chain.scripts.commitment_lock.cellDeps,
    ...t.chain.scripts.secp256k1_blake160_sighash_all.cellDeps,
  ];
  const CAP = 550n * CKB - 456n;

  it('revocation: a newer version signed by the aggregate key sweeps the cell', () => {
    const a = args(settlementScript(false));
    const cell = fund(lockWith(a), CAP);
    const tx = ccc.Transaction.from({
      version: 0,
      cellDeps: deps(),
      inputs: [{ previousOutput: cell.outPoint, since: 0n }],
      outputs: [{ lock: lockOf(KEY_B), capacity: CAP - 1000n }],
      outputsData: ['0x'],
    });
    const out0 = tx.outputs[0] as ccc.CellOutput;
    const revMsg = (v: bigint) => ckbHash(out0.toBytes(), new Uint8Array(4), a.subarray(0, 28), be64(v));
    const w = (v: bigint, sig: Uint8Array) =>
      hex(cat(EMPTY_WITNESS_ARGS, new Uint8Array([0]), be64(v), revXonly, sig));
    const older = tx.clone();
    older.witnesses = [w(4n, signTogether([fundA, fundB], revKeys, revMsg(4n)))];
    expect(exitCode(older)).toBe(16);
    const sortedInstead = tx.clone();
    const sk = [revKeys[1] as Uint8Array, revKeys[0] as Uint8Array]; // holder first: the wrong order
    sortedInstead.witnesses = [
      hex(
        cat(
          EMPTY_WITNESS_ARGS,
          new Uint8Array([0]),
          be64(6n),
          aggregateXOnly(sk),
          signTogether([fundA, fundB], sk, revMsg(6n)),
        ),
      ),
    ];
    expect(exitCode(sortedInstead)).toBe(22);
    tx.witnesses = [w(6n, signTogether([fundA, fundB], revKeys, revMsg(6n)))];
    expect(exitCode(tx)).toBe(0);
  });

  /** A settlement of the commitment cell by the holder's party entry, after `blocks` blocks. */
  function partySettlement(
    cell: ViewCell,
    script: Uint8Array,
    since: bigint,
    signer: Uint8Array,
    newScript: Uint8Array,
  ) {
    const a = ccc.bytesFrom(cell.output.lock.args);
    const tx = ccc.Transaction.from({
      version: 0,
      cellDeps: deps(),
      inputs: [{ previousOutput: cell.outPoint, since }],
      outputs: [
        {
          ...cell.output,
          lock: lockWith(cat(a.subarray(0, 36), blake160(newScript), new Uint8Array([1]))),
          capacity: CAP - 300n * CKB,
        },
        { lock: lockOf(KEY_A), capacity: 300n * CKB - 1000n },
      ],
      outputsData: ['0x', '0x'],
    });
    const sig = signRecoverable(msgOf(tx), signer);
    tx.witnesses = [
      hex(cat(EMPTY_WITNESS_ARGS, new Uint8Array([1]), script, new Uint8Array([0xfe, 0]), sig)),
    ];
    return tx;
  }

  it('party settlement: only after the delay, only by the holder, with the right continuation', () => {
    const script = settlementScript(false);
    const cell = fund(lockWith(args(script)), CAP);
    const newScript = cat(new Uint8Array([0]), new Uint8Array(36), pkh(setB), le128(200n * CKB));
    // The since does not prove the delay: script error 6.
    expect(exitCode(partySettlement(cell, script, 0n, setA, newScript))).toBe(6);
    // The since is right but the chain has not reached it: consensus says immature.
    expect(() => t.chain.sendTransaction(partySettlement(cell, script, DELAY, setA, newScript))).toThrow(
      /Immature/,
    );
    for (let i = 0; i < 10; i++) t.chain.generateBlock();
    expect(exitCode(partySettlement(cell, script, DELAY, setB, newScript))).toBe(22);
    const wrongOut = partySettlement(cell, script, DELAY, setA, settlementScript(false));
    expect(exitCode(wrongOut)).toBe(18);
    expect(exitCode(partySettlement(cell, script, DELAY, setA, newScript))).toBe(0);
  });

  function tlcSettlement(
    cell: ViewCell,
    entry: Uint8Array,
    extraInput?: { cell: ViewCell; since: bigint },
    groupSince = mulDelay(DELAY, 1n, 3n),
  ) {
    const script = settlementScript(true);
    const newScript = cat(new Uint8Array([0]), script.subarray(86));
    const a = ccc.bytesFrom(cell.output.lock.args);
    const inputs = [{ previousOutput: cell.outPoint, since: groupSince }];
    if (extraInput) inputs.push({ previousOutput: extraInput.cell.outPoint, since: extraInput.since });
    const extraCap = extraInput?.cell.output.capacity ?? 0n;
    const tx = ccc.Transaction.from({
      version: 0,
      cellDeps: deps(),
      inputs,
      outputs: [
        {
          lock: lockWith(cat(a.subarray(0, 36), blake160(newScript), new Uint8Array([1]))),
          capacity: CAP - 100n * CKB,
        },
        { lock: lockOf(KEY_A), capacity: 100n * CKB + extraCap - 2000n },
      ],
      outputsData: ['0x', '0x'],
    });
    return {
      tx,
      script,
      finish: (sig: Uint8Array, pre?: Uint8Array) => {
        const e = pre ? cat(entry, sig, pre) : cat(entry, sig);
        tx.witnesses = [hex(cat(EMPTY_WITNESS_ARGS, new Uint8Array([1]), script, e))];
        if (extraInput) tx.witnesses.push('0x');
        return tx;
      },
    };
  }

  it('TLC by preimage: the holder claims with the preimage before expiry', () => {
    const cell = fund(lockWith(args(settlementScript(true))), CAP);
    for (let i = 0; i < 4; i++) t.chain.generateBlock(); // ≥ 1/3 epoch
    const wrongPre = tlcSettlement(cell, new Uint8Array([0, 1]));
    expect(exitCode(wrongPre.finish(signRecoverable(msgOf(wrongPre.tx), tlcA), new Uint8Array(32)))).toBe(21);
    const noPre = tlcSettlement(cell, new Uint8Array([0, 0]));
    expect(exitCode(noPre.finish(signRecoverable(msgOf(noPre.tx), tlcA)))).toBe(21);
    const wrongKey = tlcSettlement(cell, new Uint8Array([0, 1]));
    expect(exitCode(wrongKey.finish(signRecoverable(msgOf(wrongKey.tx), tlcB), preimage))).toBe(22);
    const early = tlcSettlement(cell, new Uint8Array([0, 1]), undefined, 0n);
    expect(exitCode(early.finish(signRecoverable(msgOf(early.tx), tlcA), preimage))).toBe(6);
    const ok = tlcSettlement(cell, new Uint8Array([0, 1]));
    expect(exitCode(ok.finish(signRecoverable(msgOf(ok.tx), tlcA), preimage))).toBe(0);
  });

  it('TLC by expiry: the offerer reclaims once a timestamp since proves the expiry', () => {
    const cell = fund(lockWith(args(settlementScript(true))), CAP);
    t.clock.now = (expirySecs + 1000n) * 1000n;
    for (let i = 0; i < 8; i++) t.chain.generateBlock(); // ≥ 2/3 epoch, median time past expiry
    const fee = cellsOf(t.chain, lockOf(KEY_A))[0] as ViewCell;
    const since = (s: bigint) => encodeSince({ relative: false, metric: 'timestamp', value: s });
    const sign = (x: ReturnType<typeof tlcSettlement>, sk: Uint8Array) => {
      const tx = x.finish(signRecoverable(msgOf(x.tx), sk));
      return tx;
    };
    /** The fee cell is A's: sign it (sighash-all) over the final transaction. */
    const signFee = (tx: ccc.Transaction) => {
      signSighashAll(tx, [1], KEY_A);
      return tx;
    };
    const twoThirds = mulDelay(DELAY, 2n, 3n);
    const before = tlcSettlement(
      cell,
      new Uint8Array([0, 0]),
      { cell: fee, since: since(expirySecs - 1n) },
      twoThirds,
    );
    {
      expect(exitCode(signFee(sign(before, tlcB)))).toBe(10);
      const byHolder = tlcSettlement(
        cell,
        new Uint8Array([0, 0]),
        { cell: fee, since: since(expirySecs) },
        twoThirds,
      );
      expect(exitCode(signFee(sign(byHolder, tlcA)))).toBe(22);
      const early = tlcSettlement(
        cell,
        new Uint8Array([0, 0]),
        { cell: fee, since: since(expirySecs) },
        mulDelay(DELAY, 1n, 3n),
      );
      expect(exitCode(signFee(sign(early, tlcB)))).toBe(6);
      const ok = tlcSettlement(
        cell,
        new Uint8Array([0, 0]),
        { cell: fee, since: since(expirySecs) },
        mulDelay(DELAY, 2n, 3n),
      );
      expect(exitCode(signFee(sign(ok, tlcB)))).toBe(0);
    }
  });

  it('computes the delay fractions like the contract', () => {
    expect(mulDelay(DELAY, 1n, 3n)).toBe(0xa000030001000000n);
    expect(mulDelay(DELAY, 2n, 3n)).toBe(0xa000030002000000n);
    expect(mulDelay(DELAY, 1n, 1n)).toBe(0xa000010000000001n);
  });
});
