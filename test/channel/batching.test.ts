/**
 * TLC batching, pure (two machines wired in memory, funded on an in-process dev chain): several
 * AddTlc / RemoveTlc, then one CommitmentSigned. A batch is bounded by the peer's in-flight limits
 * like TLCs offered one by one, both sides batching at once collide and resolve as single
 * updates do, and a cut anywhere in a batched round is resumed by reestablish. After every
 * step each side's balances and pending TLCs add up to the channel's funds, and once the round
 * is over both sides agree.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { step } from '../../src/channel/machine.ts';
import { reestablishMessage } from '../../src/channel/reestablish.ts';
import { type Channel, serializeChannelLean } from '../../src/channel/state.ts';
import type { Effect } from '../../src/channel/step.ts';
import type { TlcCommand, TlcOutcome } from '../../src/channel/tlc.ts';
import { CKB } from '../../src/channel/tx.ts';
import { ckbHash } from '../../src/crypto/hash.ts';
import { openTestChain, type TestChain } from '../devchain/helpers.ts';
import { pairHarness, type Side } from './pair-harness.ts';

let t: TestChain;
let h: ReturnType<typeof pairHarness>;
beforeEach(() => {
  t = openTestChain();
  h = pairHarness(t, undefined, { likeService: true });
});
afterEach(() => t.close());

const preimage = (n: number) => new Uint8Array(32).fill(n);
const add = (n: number, amount = BigInt(n) * CKB): TlcCommand => ({
  type: 'addTlc',
  cmd: {
    amount,
    paymentHash: ckbHash(preimage(n)),
    expiry: 1_800_000_000_000n,
    hashAlgorithm: 0,
    // A stand-in onion per payment: the state keeps it whatever happens to the round.
    onion: new Uint8Array(64).fill(n),
  },
});
const fulfil = (id: bigint, n: number): TlcCommand => ({
  type: 'removeTlc',
  id,
  reason: { preimage: preimage(n) },
});
const fail = (id: bigint): TlcCommand => ({ type: 'removeTlc', id, reason: { error: new Uint8Array([1]) } });

/** A refusal as its code and message (fnn's text), the rest as is. */
type Answer = { ok: true; tlcId?: bigint } | { ok: false; code: string; error: string };

/** `me` runs a batch of commands; its messages wait in the peer's inbox. */
function batch(me: Side, other: Side, cmds: TlcCommand[]): Answer[] {
  const s = step(me.ch, { type: 'tlcBatch', cmds }, h.env());
  me.ch = s.ch;
  h.perform(me, other, s.effects, []);
  return (s.outcomes ?? []).map((o: TlcOutcome) =>
    o.ok ? o : { ok: false, code: o.error.code, error: o.error.message },
  );
}

/** Both fundings without the reserves: what balances and pending TLCs always add up to. */
const funds = (ch: Channel) => ch.local.fundingAmount + (ch.remote?.fundingAmount ?? 0n);
const pending = (ch: Channel) => ch.tlcs.filter((x) => !x.removal).reduce((s, x) => s + x.amount, 0n);

function conserved(s: Side): void {
  expect(s.ch.localBalance + s.ch.remoteBalance + pending(s.ch)).toBe(funds(s.ch));
}

/** The round is over on both sides, and they agree on balances and TLCs. */
function agreed(A: Side, B: Side): void {
  conserved(A);
  conserved(B);
  expect([A.ch.round ?? null, B.ch.round ?? null]).toEqual([null, null]);
  expect([A.ch.localBalance, A.ch.remoteBalance]).toEqual([B.ch.remoteBalance, B.ch.localBalance]);
  const view = (ch: Channel, mine: boolean) =>
    ch.tlcs
      .map((x) => `${x.offered === mine ? 'A' : 'B'}${x.id}:${x.amount}:${x.added}`)
      .sort()
      .join(' ');
  expect(view(A.ch, true)).toBe(view(B.ch, false));
  expect([A.ch.commitmentNumbers.local, A.ch.commitmentNumbers.remote]).toEqual([
    B.ch.commitmentNumbers.remote,
    B.ch.commitmentNumbers.local,
  ]);
}

/** Delivers everything, checking conservation after every message. */
function runChecked(A: Side, B: Side): void {
  while (h.runSteps(A, B, 1) > 0) {
    conserved(A);
    conserved(B);
  }
}

const types = (s: Side) => s.inbox.map((m) => m.type);
const notices = (s: Side, type: string) =>
  s.seen.filter((e: Effect) => e.type === 'tlc' && e.notice.type === type).length;

describe('a batch of TLC updates', () => {
  it('five AddTlc go out with a single CommitmentSigned, and all five commit in one round', () => {
    const { A, B } = h.readyPair();
    const before = A.ch.localBalance;
    const numbers = A.ch.commitmentNumbers;
    const out = batch(
      A,
      B,
      [1, 2, 3, 4, 5].map((n) => add(n)),
    );
    expect(out).toEqual([0n, 1n, 2n, 3n, 4n].map((tlcId) => ({ ok: true, tlcId })));
    expect(types(B)).toEqual([...Array(5).fill('AddTlc'), 'CommitmentSigned']);
    runChecked(A, B);
    agreed(A, B);
    expect(A.ch.localBalance).toBe(before - 15n * CKB);
    expect(B.ch.tlcs.map((x) => [x.id, x.added])).toEqual(
      [0n, 1n, 2n, 3n, 4n].map((id) => [id, 'committed']),
    );
    expect(notices(B, 'received')).toBe(5);
    // Each AddTlc is noticed as announced when it arrives, before the round commits it.
    const order = B.seen.flatMap((e: Effect) => (e.type === 'tlc' ? [e.notice.type] : []));
    expect(order).toEqual([...Array(5).fill('announced'), ...Array(5).fill('received')]);
    // One round: each commitment moved on by one version.
    expect(A.ch.commitmentNumbers).toEqual({ local: numbers.local + 1n, remote: numbers.remote + 1n });
  });

  it('the states written during the round hold no onion: the round keeps references and a few numbers', () => {
    const { A, B } = h.readyPair();
    batch(A, B, [add(1), add(2), add(3)]);
    expect(A.ch.round?.before).toEqual({
      localBalance: expect.any(BigInt),
      remoteBalance: expect.any(BigInt),
      nextTlcId: { offered: 0n, received: 0n },
      removed: [],
      theirNonce: expect.any(String),
    });
    expect(A.ch.cache?.updates).toEqual(['add:0', 'add:1', 'add:2']);
    const onionHex = (n: number) => Buffer.from(new Uint8Array(64).fill(n)).toString('hex');
    const written = () => [serializeChannelLean(A.ch), serializeChannelLean(B.ch)].join();
    for (const n of [1, 2, 3]) expect(written()).not.toContain(onionHex(n));
    // Each step of the round writes a state; none of them carries an onion.
    while (h.runSteps(A, B, 1) > 0) for (const n of [1, 2, 3]) expect(written()).not.toContain(onionHex(n));
    agreed(A, B);
  });

  it('mixes removes and adds: fulfils and failures of the peer’s TLCs with new TLCs of ours', () => {
    const { A, B } = h.readyPair();
    batch(
      A,
      B,
      [1, 2, 3].map((n) => add(n)),
    );
    h.run(A, B);
    const [a0, b0] = [A.ch.localBalance, B.ch.localBalance];
    const out = batch(B, A, [fulfil(0n, 1), add(7), fail(1n), add(8), fulfil(2n, 3)]);
    expect(out).toEqual([
      { ok: true },
      { ok: true, tlcId: 0n },
      { ok: true },
      { ok: true, tlcId: 1n },
      { ok: true },
    ]);
    expect(types(A)).toEqual(['RemoveTlc', 'AddTlc', 'RemoveTlc', 'AddTlc', 'RemoveTlc', 'CommitmentSigned']);
    runChecked(A, B);
    agreed(A, B);
    // B gained TLCs 0 and 2 (1 + 3 CKB) and offered 7 + 8; A got TLC 1 (2 CKB) back.
    expect(B.ch.localBalance).toBe(b0 + 4n * CKB - 15n * CKB);
    expect(A.ch.localBalance).toBe(a0 + 2n * CKB);
    expect(A.ch.tlcs.map((x) => [x.offered, x.id])).toEqual([
      [false, 0n],
      [false, 1n],
    ]);
    expect([notices(A, 'fulfilled'), notices(A, 'failed'), notices(A, 'received')]).toEqual([2, 1, 2]);
  });

  it('is bounded by the peer’s limits and our balance: what does not fit is refused, the rest goes', () => {
    const { A, B } = h.readyPair();
    // B accepts at most 3 TLCs from A in flight.
    (A.ch.remote as NonNullable<Channel['remote']>).maxTlcNumberInFlight = 3n;
    B.ch = { ...B.ch, local: { ...B.ch.local, maxTlcNumberInFlight: 3n } };
    const out = batch(A, B, [add(1), add(2, 10_000n * CKB), add(3), add(4), add(5)]);
    // fnn's answers: the TlcErr of each refusal (TlcAmountExceedLimit, TlcNumberExceedLimit).
    expect(out).toEqual([
      { ok: true, tlcId: 0n },
      { ok: false, code: 'TlcLimitExceeded', error: 'TemporaryChannelFailure' },
      { ok: true, tlcId: 1n },
      { ok: true, tlcId: 2n },
      { ok: false, code: 'TlcLimitExceeded', error: 'TemporaryChannelFailure' },
    ]);
    runChecked(A, B);
    agreed(A, B);
    expect(B.ch.tlcs.map((x) => x.id)).toEqual([0n, 1n, 2n]);
  });

  it('while a round is in flight every command is refused with the waiting-ACK text, nothing changes', () => {
    const { A, B } = h.readyPair();
    batch(A, B, [add(1)]);
    const ch = A.ch;
    const out = batch(A, B, [add(2), add(3)]);
    const waiting = 'Unable to handle TLC command in waiting TLC ACK state';
    expect(out).toEqual([
      { ok: false, code: 'WaitingTlcAck', error: waiting },
      { ok: false, code: 'WaitingTlcAck', error: waiting },
    ]);
    expect(A.ch).toBe(ch);
    h.run(A, B);
    agreed(A, B);
  });
});

describe('both sides batching at once', () => {
  it('collide: the loser steps its whole batch back and re-issues it, under the same ids, after the winner’s round', () => {
    const { A, B } = h.readyPair();
    batch(A, B, [add(1), add(2)]);
    h.run(A, B);
    const aWins = A.ch.local.fundingPubkey < B.ch.local.fundingPubkey;
    const outA = batch(A, B, [add(3), add(4), add(5)]);
    const outB = batch(B, A, [fulfil(0n, 1), add(6), fail(1n), add(9)]);
    const loser = aWins ? B : A;
    let steppedBack = 0;
    const onionsKept = (ch: Channel) => ch.tlcs.every((x) => x.onion.length === 64);
    while (h.runSteps(A, B, 1) > 0) {
      conserved(A);
      conserved(B);
      // The step back (its snapshot keeps no onions) gives every TLC its own onion back.
      expect([onionsKept(A.ch), onionsKept(B.ch)]).toEqual([true, true]);
      steppedBack = Math.max(steppedBack, loser.ch.retry?.length ?? 0);
    }
    expect(steppedBack).toBe(aWins ? 4 : 3);
    agreed(A, B);
    expect(outA.every((o) => o.ok)).toBe(true);
    expect(outB.every((o) => o.ok)).toBe(true);
    // Every update of both batches made it, whoever won: A's TLCs 2–4, B's 0–1; A's 0 and 1 resolved.
    const ids = (ch: Channel, offered: boolean) =>
      ch.tlcs.filter((x) => x.offered === offered).map((x) => x.id);
    expect(ids(A.ch, true)).toEqual([2n, 3n, 4n]);
    expect(ids(A.ch, false)).toEqual([0n, 1n]);
    expect([A.ch.retry ?? [], B.ch.retry ?? []]).toEqual([[], []]);
    expect(notices(loser, 'dropped')).toBe(0);
    expect(A.ch.tlcs.find((x) => x.offered && x.id === 2n)?.paymentHash).toBe(
      `0x${Buffer.from(ckbHash(preimage(3))).toString('hex')}`,
    );
  });

  it('a re-issued AddTlc that can no longer go out is dropped, and so are the ones after it (their ids would shift)', () => {
    let now = 1_700_000_000_000;
    h = pairHarness(t, () => now, { likeService: true });
    const { A, B } = h.readyPair();
    const aWins = A.ch.local.fundingPubkey < B.ch.local.fundingPubkey;
    const [winner, loser] = aWins ? [A, B] : [B, A];
    batch(winner, loser, [add(1)]);
    const expiring = add(2);
    if (expiring.type === 'addTlc') expiring.cmd.expiry = BigInt(now + 1_000);
    const out = batch(loser, winner, [add(3), expiring, add(4)]);
    expect(out.map((o) => o.ok && o.tlcId)).toEqual([0n, 1n, 2n]);
    now += 2_000; // TLC 1 of the loser expires before the batch can be offered again
    runChecked(A, B);
    agreed(A, B);
    expect(loser.ch.tlcs.filter((x) => x.offered).map((x) => x.id)).toEqual([0n]);
    const dropped = loser.seen.flatMap((e) =>
      e.type === 'tlc' && e.notice.type === 'dropped' ? [e.notice.tlc.id] : [],
    );
    expect(dropped).toEqual([1n, 2n]);
    expect(loser.ch.nextTlcId.offered).toBe(1n);
  });
});

describe('a cut in the middle of a batched round', () => {
  // A's batch: 3 adds + 2 removes of B's TLCs, then CommitmentSigned; B answers with
  // RevokeAndAck + CommitmentSigned (and nonce adverts), A ends with RevokeAndAck.
  for (let cut = 0; cut <= 12; cut++) {
    it(`after ${cut} message(s), reestablish completes the round with every update on both sides`, () => {
      const { A, B } = h.readyPair();
      batch(B, A, [add(1), add(2)]);
      h.run(A, B);
      batch(A, B, [add(3), fulfil(0n, 1), add(4), fail(1n), add(5)]);
      h.runSteps(A, B, cut);
      conserved(A);
      conserved(B);
      A.inbox.length = 0;
      B.inbox.length = 0;
      B.inbox.push(reestablishMessage(A.ch));
      A.inbox.push(reestablishMessage(B.ch));
      runChecked(A, B);
      agreed(A, B);
      expect(A.ch.tlcs.map((x) => [x.offered, x.id, x.added])).toEqual([
        [true, 0n, 'committed'],
        [true, 1n, 'committed'],
        [true, 2n, 'committed'],
      ]);
      expect(notices(B, 'received')).toBe(3);
      // A's fulfil of B's TLC 0 is reported to B once, however the round was cut and replayed.
      expect([notices(B, 'preimage'), notices(B, 'fulfilled'), notices(B, 'failed')]).toEqual([1, 1, 1]);
      // The channel goes on: another batch from B commits normally.
      batch(B, A, [fulfil(0n, 3), add(6)]);
      runChecked(A, B);
      agreed(A, B);
      expect(A.ch.tlcs).toHaveLength(3);
    });
  }
});

describe('a preimage from the peer', () => {
  it('is reported as it is sent and as it arrives, before the round that removes the TLC ends; a failure only once committed', () => {
    const { A, B } = h.readyPair();
    batch(A, B, [add(1), add(2)]);
    h.run(A, B);
    batch(B, A, [fulfil(0n, 1), fail(1n)]);
    expect(types(A)).toEqual(['RemoveTlc', 'RemoveTlc', 'CommitmentSigned']);
    // The giver reports it too, with the state that sends it (its invoice is Paid from then on).
    const given = B.seen.flatMap((e: Effect) =>
      e.type === 'tlc' && e.notice.type === 'preimage' ? [[e.notice.tlc.offered, e.notice.tlc.id]] : [],
    );
    expect(given).toEqual([[false, 0n]]);
    h.runSteps(B, A, 1); // A takes the fulfil
    const got = A.seen.flatMap((e: Effect) =>
      e.type === 'tlc' && e.notice.type === 'preimage' ? [[e.notice.tlc.id, e.notice.preimage]] : [],
    );
    expect(got).toEqual([[0n, `0x${'01'.repeat(32)}`]]);
    expect(A.ch.round?.initiator).toBe('remote');
    h.runSteps(B, A, 1); // the failure: nothing yet
    expect([notices(A, 'preimage'), notices(A, 'failed'), notices(A, 'fulfilled')]).toEqual([1, 0, 0]);
    runChecked(A, B);
    agreed(A, B);
    expect([notices(A, 'preimage'), notices(A, 'failed'), notices(A, 'fulfilled')]).toEqual([1, 1, 1]);
  });
});
