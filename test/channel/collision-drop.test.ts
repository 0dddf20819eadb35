/**
 * A TLC that loses a collision is re-offered after the winner's round; when it can no longer be
 * offered (here: its expiry passed meanwhile), its owner is told with a `dropped` notice instead
 * of waiting for an outcome that will never come.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Effect } from '../../src/channel/step.ts';
import { CKB } from '../../src/channel/tx.ts';
import { bytesToHex } from '../../src/codec/hex.ts';
import { openTestChain, type TestChain } from '../devchain/helpers.ts';
import { NOW, pairHarness, type Side } from './pair-harness.ts';

let t: TestChain;
let now = NOW;
beforeEach(() => {
  t = openTestChain();
  now = NOW;
});
afterEach(() => t.close());

const tlc = (fill: number, expiry: number) => ({
  amount: 10n * CKB,
  paymentHash: new Uint8Array(32).fill(fill),
  expiry: BigInt(expiry),
  hashAlgorithm: 0,
  onion: new Uint8Array(0),
});

const notices = (s: Side) =>
  s.seen.flatMap((e: Effect) =>
    e.type === 'tlc' ? [{ type: e.notice.type, hash: e.notice.tlc.paymentHash }] : [],
  );

describe('a TLC stepped back by a collision', () => {
  it('is reported dropped when it cannot be offered again; the winner’s TLC commits', () => {
    const h = pairHarness(t, () => now);
    const { A, B } = h.readyPair();
    const aWins = A.ch.local.fundingPubkey < B.ch.local.fundingPubkey;
    const [winner, loser] = aWins ? [A, B] : [B, A];
    const loserBalance = loser.ch.localBalance;
    h.feed(winner, loser, { type: 'addTlc', cmd: tlc(1, NOW + 3_600_000) });
    h.feed(loser, winner, { type: 'addTlc', cmd: tlc(2, NOW + 1_000) });
    now = NOW + 2_000; // the loser's TLC expires before it can be offered again
    h.run(A, B);
    const lost = bytesToHex(new Uint8Array(32).fill(2));
    expect(notices(loser)).toContainEqual({ type: 'dropped', hash: lost });
    expect(loser.ch.tlcs.some((x) => x.paymentHash === lost)).toBe(false);
    expect(winner.ch.tlcs.some((x) => x.paymentHash === lost)).toBe(false);
    expect(loser.ch.localBalance).toBe(loserBalance);
    expect(winner.ch.tlcs.map((x) => x.added)).toEqual(['committed']);
    expect(loser.ch.retry ?? []).toEqual([]);
  });
});
