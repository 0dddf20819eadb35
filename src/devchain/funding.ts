/**
 * The faucet's transactions: CKB and the dev chain's two test tokens — the test UDT (simple UDT)
 * and the test xUDT — paid from the faucet key's plain cells. Both tokens are owned by the faucet
 * lock (their args are its lock hash), so the faucet mints them by spending its own cells.
 */
import { ccc } from '@ckb-ccc/core';
import { SIGHASH_ALL_TYPE_HASH } from '../chain/index.ts';
import { bytesToHex, hexToBytes, SHANNONS_PER_CKB } from '../codec/index.ts';
import { lockArgsOf, signSighashAll } from '../crypto/index.ts';
import type { ViewCell } from './validate.ts';

export const SIGHASH_TYPE_HASH = SIGHASH_ALL_TYPE_HASH as ccc.Hex;
/** Capacity of each token cell the faucet issues: a sighash lock, a 32-byte-args type, 16 bytes. */
export const UDT_CELL_CAPACITY = 142n * SHANNONS_PER_CKB;

export interface DevAccount {
  lock: ccc.ScriptLike;
  /** Shannons of CKB. */
  capacity: bigint;
  /** Test-UDT amount (a separate cell with 142 CKB of its own). */
  udt?: bigint;
  /** Test-xUDT amount (likewise a separate cell). */
  xudt?: bigint;
}

export interface TokenScript {
  codeHash: ccc.Hex;
  hashType: ccc.HashType;
  args: ccc.Hex;
}

type CellDeps = { cellDeps: ccc.CellDepLike[] };

export interface FundingSource {
  liveCellsByLock(lock: ccc.Script): ViewCell[];
  scripts: {
    secp256k1_blake160_sighash_all: CellDeps;
    test_udt: TokenScript;
    test_xudt: TokenScript;
    /** The code cells, absent while the setup transaction that deploys them is being built. */
    simple_udt?: CellDeps;
    xudt?: CellDeps;
  };
}

export function faucetLockOf(faucetKey: ccc.Hex): ccc.Script {
  return ccc.Script.from({
    codeHash: SIGHASH_TYPE_HASH,
    hashType: 'type',
    args: bytesToHex(lockArgsOf(hexToBytes(faucetKey, 'faucet key', 32))),
  });
}

/** The two test tokens, owned by the faucet lock; `data2` like the dev chain's other scripts. */
export function testTokens(
  faucetLock: ccc.Script,
  codeHashes: { simpleUdt: ccc.Hex; xudt: ccc.Hex },
): { test_udt: TokenScript; test_xudt: TokenScript } {
  const args = faucetLock.hash();
  return {
    test_udt: { codeHash: codeHashes.simpleUdt, hashType: 'data2', args },
    test_xudt: { codeHash: codeHashes.xudt, hashType: 'data2', args },
  };
}

/**
 * A transaction from the faucet key's plain cells paying each account (and a cell of each token
 * asked for) plus extra outputs, with change back to the faucet; fee 1000 shannons/KB.
 */
export function buildFunding(
  src: FundingSource,
  faucetKey: ccc.Hex,
  accounts: DevAccount[],
  extra: { lock: ccc.ScriptLike; data: Uint8Array }[],
  usable: (op: ccc.OutPoint) => boolean,
): ccc.Transaction {
  const sk = hexToBytes(faucetKey, 'faucet key', 32);
  const faucetLock = faucetLockOf(faucetKey);
  const tx = ccc.Transaction.from({ version: 0 });
  for (const d of src.scripts.secp256k1_blake160_sighash_all.cellDeps) tx.cellDeps.push(ccc.CellDep.from(d));
  for (const e of extra) {
    const out = ccc.CellOutput.from({ lock: e.lock }, ccc.hexFrom(e.data));
    tx.addOutput(out, ccc.hexFrom(e.data));
  }
  const tokens = [
    {
      amount: (a: DevAccount) => a.udt,
      type: src.scripts.test_udt,
      code: src.scripts.simple_udt,
      used: false,
    },
    { amount: (a: DevAccount) => a.xudt, type: src.scripts.test_xudt, code: src.scripts.xudt, used: false },
  ];
  for (const a of accounts) {
    tx.addOutput({ lock: a.lock, capacity: a.capacity }, '0x');
    for (const t of tokens) {
      const amount = t.amount(a);
      if (!amount || amount <= 0n) continue;
      t.used = true;
      tx.addOutput(
        { lock: a.lock, type: t.type, capacity: UDT_CELL_CAPACITY },
        ccc.hexFrom(ccc.numLeToBytes(amount, 16)),
      );
    }
  }
  for (const t of tokens.filter((x) => x.used)) {
    if (!t.code) throw new Error('the test tokens are not deployed yet');
    for (const d of t.code.cellDeps) tx.cellDeps.push(ccc.CellDep.from(d));
  }
  const outSum = tx.outputs.reduce((s, o) => s + o.capacity, 0n);
  const cells = src.liveCellsByLock(faucetLock).filter((c) => usable(c.outPoint));
  let inSum = 0n;
  for (const c of cells) {
    tx.inputs.push(ccc.CellInput.from({ previousOutput: c.outPoint, since: 0n }));
    inSum += c.output.capacity;
    if (inSum >= outSum + 62n * SHANNONS_PER_CKB) break;
  }
  const change = ccc.CellOutput.from({ lock: faucetLock, capacity: 0n });
  tx.addOutput(change, '0x');
  // Placeholder witness so the size (and fee) is final before signing.
  tx.witnesses = [ccc.hexFrom(ccc.WitnessArgs.from({ lock: ccc.hexFrom(new Uint8Array(65)) }).toBytes())];
  const fee = (BigInt(tx.toBytes().length + 4) * 1000n + 999n) / 1000n;
  if (inSum < outSum + fee + 61n * SHANNONS_PER_CKB) {
    throw new Error(`faucet has too little CKB: needs ${outSum + fee} shannons plus change, has ${inSum}`);
  }
  (tx.outputs[tx.outputs.length - 1] as ccc.CellOutput).capacity = inSum - outSum - fee;
  signSighashAll(
    tx,
    tx.inputs.map((_, i) => i),
    sk,
  );
  return tx;
}
