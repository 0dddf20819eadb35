/**
 * `commitmentNumberOf` reads the number a commitment carries in its lock args — the number
 * `submit_commitment_transaction` takes: it is 1 for the funding commitment and goes up by
 * one with every round our commitment is signed in (pure machines, dev chain in process).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { commitmentNumberOf } from '../../src/channel/commitment-number.ts';
import type { Channel } from '../../src/channel/state.ts';
import { CKB } from '../../src/channel/tx.ts';
import { ckbHash } from '../../src/crypto/hash.ts';
import { openTestChain, type TestChain } from '../devchain/helpers.ts';
import { pairHarness } from './pair-harness.ts';

let t: TestChain;
let h: ReturnType<typeof pairHarness>;
beforeEach(() => {
  t = openTestChain();
  h = pairHarness(t);
});
afterEach(() => t.close());

const preimage = new Uint8Array(32).fill(7);
const numberOf = (ch: Channel) => commitmentNumberOf(ch.latestCommitmentTx as string);

describe('commitmentNumberOf', () => {
  it('is the number in the commitment lock args, one up per signed round', () => {
    const { A, B } = h.readyPair();
    const first = numberOf(A.ch);
    expect(numberOf(B.ch)).toBe(first);
    // The funding commitment is number 1 (the counters start at 1 when it is signed).
    expect(first).toBe(1n);
    expect(A.ch.commitmentNumbers).toEqual({ local: 2n, remote: 2n });
    const add = { amount: 10n * CKB, paymentHash: ckbHash(preimage), expiry: 1_800_000_000_000n };
    h.feed(A, B, { type: 'addTlc', cmd: { ...add, hashAlgorithm: 0, onion: new Uint8Array(0) } });
    h.run(A, B);
    expect(numberOf(A.ch)).toBe(first + 1n);
    expect(numberOf(B.ch)).toBe(first + 1n);
    h.feed(B, A, { type: 'removeTlc', id: 0n, reason: { preimage } });
    h.run(A, B);
    expect(numberOf(A.ch)).toBe(first + 2n);
  });

  it('refuses bytes that are not a commitment', () => {
    expect(() => commitmentNumberOf('0x')).toThrow();
  });
});
