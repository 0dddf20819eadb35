/**
 * Outputs may never exceed inputs, whatever lock the inputs carry — including a 2-of-2 funding
 * cell spent by a correctly signed transaction (the shape of a cooperative close).
 */
import { ccc } from '@ckb-ccc/core';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { blake160, ckbHash } from '../../src/crypto/hash.ts';
import { aggregateXOnly, signTogether, sortPubkeys } from '../../src/crypto/musig2.ts';
import { EMPTY_WITNESS_ARGS } from '../../src/devchain/scripts/context.ts';
import { buildTx, CKB, cellsOf, KEY_A, KEY_B, lockOf, openTestChain, type TestChain } from './helpers.ts';

let t: TestChain;
beforeEach(() => {
  t = openTestChain();
});
afterEach(() => t.close());

it('refuses a signed funding-cell spend that pays out more than the cell holds', () => {
  const skA = new Uint8Array(32).fill(0x21);
  const skB = new Uint8Array(32).fill(0x42);
  const keys = sortPubkeys([secp256k1.getPublicKey(skA, true), secp256k1.getPublicKey(skB, true)]);
  const xonly = aggregateXOnly(keys);
  const lock = {
    codeHash: t.chain.scripts.funding_lock.codeHash,
    hashType: t.chain.scripts.funding_lock.hashType,
    args: ccc.hexFrom(blake160(xonly)),
  };
  const src = cellsOf(t.chain, lockOf(KEY_A))[0]!;
  const fundTx = buildTx(t.chain, {
    inputs: [{ cell: src }],
    outputs: [
      { lock, capacity: 750n * CKB },
      { lock: lockOf(KEY_A), capacity: src.output.capacity - 750n * CKB - 10_000n },
    ],
    keys: [KEY_A],
  });
  const fundHash = t.chain.sendTransaction(fundTx);
  t.chain.generateBlock();
  const close = ccc.Transaction.from({
    version: 0,
    cellDeps: t.chain.scripts.funding_lock.cellDeps,
    inputs: [{ previousOutput: { txHash: fundHash, index: 0 }, since: 0n }],
    outputs: [
      { lock: lockOf(KEY_A), capacity: 49_849_999_509n },
      { lock: lockOf(KEY_B), capacity: 252n * CKB },
    ],
    outputsData: ['0x', '0x'],
  });
  const msg = (() => {
    const c = close.clone();
    c.cellDeps = [];
    return ckbHash(c.rawToBytes());
  })();
  const sig = signTogether([skA, skB], keys, msg);
  close.witnesses = [ccc.hexFrom(Buffer.concat([EMPTY_WITNESS_ARGS, xonly, sig]))];
  expect(() => t.chain.sendTransaction(close)).toThrow(/OutputsSumOverflow/);
});
