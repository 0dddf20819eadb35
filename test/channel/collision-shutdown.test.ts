/**
 * A lost round collision steps back only the loser's own updates (`collide` in `tlc.ts`): a
 * Shutdown received or sent while the loser's round was unacknowledged survives the step back,
 * so the cooperative close still completes on both sides — in both rule modes, and across a
 * reconnect. And once the cooperative close is broadcast, a peer's force-close request (or a
 * claim of lost state) is ignored: no commitment of ours competes with the close.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FORCE_CLOSE_REQUEST } from '../../src/channel/outdated.ts';
import { reestablishMessage } from '../../src/channel/reestablish.ts';
import type { ChannelRules } from '../../src/channel/reserve.ts';
import type { Effect } from '../../src/channel/step.ts';
import { CKB } from '../../src/channel/tx.ts';
import { hexToBytes } from '../../src/codec/hex.ts';
import { ckbHash } from '../../src/crypto/hash.ts';
import { openTestChain, type TestChain } from '../devchain/helpers.ts';
import { pairHarness, type Side } from './pair-harness.ts';

let t: TestChain;
let h: ReturnType<typeof pairHarness>;
beforeEach(() => {
  t = openTestChain();
  h = pairHarness(t);
});
afterEach(() => t.close());

const preimage = new Uint8Array(32).fill(7);
const tlc = (amount: bigint) => ({
  amount,
  paymentHash: ckbHash(preimage),
  expiry: 1_800_000_000_000n,
  hashAlgorithm: 0,
  onion: new Uint8Array(0),
});

/**
 * A ready pair with one committed TLC each way (so that either side can start a removal round
 * while shutting down), told apart as the collision's winner (smaller funding key) and loser.
 */
function crossedPair(rules: ChannelRules) {
  const { A, B } = h.readyPair({ rules });
  h.feed(A, B, { type: 'addTlc', cmd: tlc(10n * CKB) });
  h.run(A, B);
  h.feed(B, A, { type: 'addTlc', cmd: tlc(20n * CKB) });
  h.run(A, B);
  for (const s of [A, B]) expect(s.ch.tlcs.map((x) => x.added)).toEqual(['committed', 'committed']);
  const aWins = A.ch.local.fundingPubkey < B.ch.local.fundingPubkey;
  const [winner, loser] = aWins ? [A, B] : [B, A];
  return { A, B, winner, loser };
}

/** The id of the TLC `s` received (the one it can settle). */
const receivedId = (s: Side) => s.ch.tlcs.find((x) => !x.offered)?.id as bigint;

/** Delivers everything waiting for `me`, in order, before the other side reads anything. */
function drain(me: Side, other: Side): void {
  while (me.inbox.length) h.feed(me, other, { type: 'peer', msg: me.inbox.shift()! });
}

/** Both sides signed the same close and broadcast it; it confirms: both CLOSED, cooperative. */
function expectClosed(A: Side, B: Side): void {
  for (const s of [A, B]) {
    expect(s.ch.state).toBe('SHUTTING_DOWN');
    expect(s.ch.tlcs).toEqual([]);
    expect(s.ch.flags).toContain('WAITING_COMMITMENT_CONFIRMATION');
    expect(s.ch.shutdown?.force).toBeFalsy();
  }
  expect(A.ch.shutdownTxHash).toBeTruthy();
  expect(A.ch.shutdownTxHash).toBe(B.ch.shutdownTxHash);
  expect(t.chain.transaction(A.ch.shutdownTxHash as string)).toBeTruthy();
  h.feed(A, B, { type: 'closeConfirmed' });
  h.feed(B, A, { type: 'closeConfirmed' });
  for (const s of [A, B]) expect([s.ch.state, s.ch.flags]).toEqual(['CLOSED', ['COOPERATIVE']]);
}

describe.each(['strand', 'fnn'] as const)('a lost collision, rules %s', (rules) => {
  it("keeps the peer's Shutdown received mid-round; the close completes", () => {
    const { A, B, winner, loser } = crossedPair(rules);
    // The loser settles what it received: its round is out, unacknowledged.
    h.feed(loser, winner, { type: 'removeTlc', id: receivedId(loser), reason: { preimage } });
    // The winner, before it reads any of that, shuts down and settles what it received.
    h.feed(winner, loser, { type: 'shutdown', cmd: {} });
    h.feed(winner, loser, { type: 'removeTlc', id: receivedId(winner), reason: { preimage } });
    expect(loser.inbox.map((m) => m.type)).toEqual(['Shutdown', 'RemoveTlc', 'CommitmentSigned']);
    // The loser takes the Shutdown mid-round, then the winner's round collides with its own.
    drain(loser, winner);
    expect(loser.ch.round?.initiator).toBe('remote');
    expect(loser.ch.state).toBe('SHUTTING_DOWN');
    expect([...loser.ch.flags].sort()).toEqual(['OUR_SHUTDOWN_SENT', 'THEIR_SHUTDOWN_SENT']);
    expect(loser.ch.shutdown?.remote).toBeTruthy();
    expect(loser.ch.shutdown?.local).toBeTruthy();
    h.run(A, B);
    expectClosed(A, B);
  });

  it('keeps our own Shutdown sent mid-round; the close completes', () => {
    const { A, B, winner, loser } = crossedPair(rules);
    h.feed(loser, winner, { type: 'removeTlc', id: receivedId(loser), reason: { preimage } });
    h.feed(loser, winner, { type: 'shutdown', cmd: { feeRate: 2000n } });
    h.feed(winner, loser, { type: 'removeTlc', id: receivedId(winner), reason: { preimage } });
    drain(loser, winner);
    expect(loser.ch.round?.initiator).toBe('remote');
    expect(loser.ch.state).toBe('SHUTTING_DOWN');
    expect(loser.ch.flags).toEqual(['OUR_SHUTDOWN_SENT']);
    expect(loser.ch.shutdown?.local?.feeRate).toBe(2000n);
    h.run(A, B);
    expectClosed(A, B);
    // The loser asked for 2000 shannons/KB: it pays the fee, the winner answered with rate 0.
    expect(winner.ch.shutdown?.remote?.feeRate).toBe(2000n);
  });

  it('keeps the Shutdown across a reconnect right after the collision; the close completes', () => {
    const { A, B, winner, loser } = crossedPair(rules);
    h.feed(loser, winner, { type: 'removeTlc', id: receivedId(loser), reason: { preimage } });
    h.feed(winner, loser, { type: 'shutdown', cmd: {} });
    h.feed(winner, loser, { type: 'removeTlc', id: receivedId(winner), reason: { preimage } });
    drain(loser, winner);
    expect(loser.ch.state).toBe('SHUTTING_DOWN');
    // The link drops: everything in flight is lost; both reestablish.
    A.inbox.length = 0;
    B.inbox.length = 0;
    A.inbox.push(reestablishMessage(B.ch));
    B.inbox.push(reestablishMessage(A.ch));
    h.run(A, B);
    expectClosed(A, B);
  });
});

const broadcasts = (s: Side) =>
  s.seen.filter((e): e is Extract<Effect, { type: 'broadcast' }> => e.type === 'broadcast');

describe.each(['strand', 'fnn'] as const)('a cooperative close broadcast, rules %s', (rules) => {
  it("ignores the peer's force-close request once the cooperative close is broadcast", () => {
    const { A, B, winner, loser } = crossedPair(rules);
    h.feed(winner, loser, { type: 'shutdown', cmd: {} });
    h.run(A, B);
    h.feed(loser, winner, { type: 'removeTlc', id: receivedId(loser), reason: { preimage } });
    h.run(A, B);
    h.feed(winner, loser, { type: 'removeTlc', id: receivedId(winner), reason: { preimage } });
    h.run(A, B);
    for (const s of [A, B]) expect(s.ch.flags).toContain('WAITING_COMMITMENT_CONFIRMATION');
    const closeHash = A.ch.shutdownTxHash;
    for (const [me, other] of [
      [A, B],
      [B, A],
    ] as const) {
      const before = me.ch;
      const sent = broadcasts(me).length;
      h.feed(me, other, {
        type: 'peer',
        msg: {
          type: 'TxAbort',
          value: {
            channelId: hexToBytes(me.ch.id),
            message: new TextEncoder().encode(`${FORCE_CLOSE_REQUEST}please`),
          },
        },
      });
      // Nothing signed, nothing broadcast, nothing changed; the refusal is logged.
      expect(broadcasts(me).length).toBe(sent);
      expect(me.ch).toBe(before);
      expect(me.sent.at(-1)?.type).not.toBe('CommitmentSigned');
      expect(me.seen.at(-1)).toMatchObject({ type: 'warn' });
      // Nor does a reestablish claiming the peer lost state make it publish its commitment.
      const { local, remote } = me.ch.commitmentNumbers;
      h.feed(me, other, {
        type: 'peer',
        msg: {
          type: 'ReestablishChannel',
          value: {
            channelId: hexToBytes(me.ch.id),
            localCommitmentNumber: remote - 2n,
            remoteCommitmentNumber: local - 2n,
          },
        },
      });
      expect(broadcasts(me).length).toBe(sent);
      expect(me.ch.shutdown?.force).toBeFalsy();
      expect(me.ch.shutdownTxHash).toBe(closeHash);
    }
    h.run(A, B);
    expectClosed(A, B);
  });
});
