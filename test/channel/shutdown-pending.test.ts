/**
 * Cooperative close with TLCs pending (pure machines, dev chain in process): Shutdown goes out at
 * once, new TLCs are refused with the reference's text, the pending ones resolve by ordinary TLC
 * rounds, and ClosingSigned follows the last one — from either side, across a reconnect too.
 */
import { ccc } from '@ckb-ccc/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ChannelError } from '../../src/channel/errors.ts';
import { step } from '../../src/channel/machine.ts';
import { reestablishMessage } from '../../src/channel/reestablish.ts';
import type { Effect } from '../../src/channel/step.ts';
import { CKB } from '../../src/channel/tx.ts';
import { ckbHash } from '../../src/crypto/hash.ts';
import { lockOf, openTestChain, type TestChain } from '../devchain/helpers.ts';
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
const ADD_REFUSED =
  'Invalid state: Invalid state ShuttingDown(ShuttingDownFlags(OUR_SHUTDOWN_SENT | THEIR_SHUTDOWN_SENT)) for adding tlc';

/** A offers B a TLC of `amount`, committed on both sides. */
function pendingPair(amount = 100n * CKB) {
  const { A, B } = h.readyPair();
  h.feed(A, B, { type: 'addTlc', cmd: tlc(amount) });
  h.run(A, B);
  expect(B.ch.tlcs.map((x) => x.added)).toEqual(['committed']);
  return { A, B };
}

function closeTx(s: Side): ccc.Transaction {
  const b = s.seen.find(
    (e): e is Extract<Effect, { type: 'broadcast' }> =>
      e.type === 'broadcast' && e.tx.hash() === s.ch.shutdownTxHash,
  );
  if (!b) throw new Error(`${s.name} broadcast no close`);
  return b.tx;
}

/** The close output paying `lock`. */
function paid(tx: ccc.Transaction, lock: ccc.Script): bigint {
  const out = tx.outputs.find((o) => o.lock.eq(lock));
  if (!out) throw new Error('no output for the lock');
  return out.capacity;
}

describe('shutdown while a TLC is pending', () => {
  it('the offerer shuts down; the TLC is fulfilled; then the close pays each side exactly', () => {
    const { A, B } = pendingPair();
    h.feed(A, B, { type: 'shutdown', cmd: {} });
    h.run(A, B);
    for (const s of [A, B]) {
      expect(s.ch.state).toBe('SHUTTING_DOWN');
      expect([...s.ch.flags].sort()).toEqual(['OUR_SHUTDOWN_SENT', 'THEIR_SHUTDOWN_SENT']);
      expect(s.ch.shutdown?.myPartial).toBeUndefined();
    }
    // No new TLC either way.
    expect(() => step(A.ch, { type: 'addTlc', cmd: tlc(CKB) }, h.env())).toThrow(ADD_REFUSED);
    expect(() => step(B.ch, { type: 'addTlc', cmd: tlc(CKB) }, h.env())).toThrow(ADD_REFUSED);
    // The pending TLC resolves by an ordinary round, then both sign the close.
    h.feed(B, A, { type: 'removeTlc', id: 0n, reason: { preimage } });
    h.run(A, B);
    for (const s of [A, B]) {
      expect(s.ch.tlcs).toEqual([]);
      expect(s.ch.flags).toContain('WAITING_COMMITMENT_CONFIRMATION');
    }
    expect(A.ch.shutdownTxHash).toBe(B.ch.shutdownTxHash);
    const tx = closeTx(A);
    expect(t.chain.transaction(tx.hash())).toBeTruthy();
    // A: 338 + its 62 reserve − the whole fee (the initiator pays); B: 288 + 62.
    const fee = 750n * CKB - tx.outputs.reduce((x, o) => x + o.capacity, 0n);
    expect(fee).toBeGreaterThan(0n);
    expect(fee).toBeLessThan(CKB / 100n);
    expect(paid(tx, lockOf(A.key))).toBe(400n * CKB - fee);
    expect(paid(tx, lockOf(B.key))).toBe(350n * CKB);
    h.feed(A, B, { type: 'closeConfirmed' });
    expect([A.ch.state, A.ch.flags]).toEqual(['CLOSED', ['COOPERATIVE']]);
  });

  it('the receiver shuts down and fails the TLC: the amount goes back to the offerer', () => {
    const { A, B } = pendingPair(40n * CKB);
    h.feed(B, A, { type: 'shutdown', cmd: {} });
    h.run(A, B);
    expect([A.ch.state, B.ch.state]).toEqual(['SHUTTING_DOWN', 'SHUTTING_DOWN']);
    h.feed(B, A, { type: 'removeTlc', id: 0n, reason: { error: new Uint8Array([1, 2]) } });
    h.run(A, B);
    const tx = closeTx(B);
    const fee = 750n * CKB - tx.outputs.reduce((x, o) => x + o.capacity, 0n);
    expect(paid(tx, lockOf(A.key))).toBe(500n * CKB);
    expect(paid(tx, lockOf(B.key))).toBe(250n * CKB - fee);
    expect(A.ch.shutdownTxHash).toBe(tx.hash());
  });

  it('a reconnect in the middle resumes the round, then the close', () => {
    const { A, B } = pendingPair();
    h.feed(A, B, { type: 'shutdown', cmd: {} });
    h.run(A, B);
    h.feed(B, A, { type: 'removeTlc', id: 0n, reason: { preimage } });
    // The RemoveTlc and CommitmentSigned are lost; both sides reconnect.
    A.inbox.length = 0;
    B.inbox.length = 0;
    A.inbox.push(reestablishMessage(B.ch));
    B.inbox.push(reestablishMessage(A.ch));
    h.run(A, B);
    expect(A.ch.tlcs).toEqual([]);
    expect(A.ch.shutdownTxHash).toBe(B.ch.shutdownTxHash);
    expect(t.chain.transaction(closeTx(A).hash())).toBeTruthy();
  });

  it('an AddTlc sent before the peer saw our Shutdown is taken and must resolve first', () => {
    const { A, B } = h.readyPair();
    // Both at once: A's AddTlc and B's Shutdown cross on the wire.
    h.feed(A, B, { type: 'addTlc', cmd: tlc(10n * CKB) });
    h.feed(B, A, { type: 'shutdown', cmd: {} });
    h.run(A, B);
    expect(B.ch.tlcs.map((x) => [x.id, x.added])).toEqual([[0n, 'committed']]);
    expect([A.ch.state, B.ch.state]).toEqual(['SHUTTING_DOWN', 'SHUTTING_DOWN']);
    expect(B.ch.shutdown?.myPartial).toBeUndefined();
    h.feed(B, A, { type: 'removeTlc', id: 0n, reason: { preimage } });
    h.run(A, B);
    const tx = closeTx(A);
    const fee = 750n * CKB - tx.outputs.reduce((x, o) => x + o.capacity, 0n);
    expect(paid(tx, lockOf(A.key))).toBe(490n * CKB);
    expect(paid(tx, lockOf(B.key))).toBe(260n * CKB - fee);
  });

  it('is refused while an offered TLC is unacknowledged; an AddTlc after both Shutdowns is refused', () => {
    const { A, B } = h.readyPair();
    h.feed(A, B, { type: 'addTlc', cmd: tlc(CKB) });
    expect(() => step(A.ch, { type: 'shutdown', cmd: {} }, h.env())).toThrow(
      'Invalid state: Unable to process shutdown command, as there are pending outbound tlcs',
    );
    h.run(A, B);
    h.feed(A, B, { type: 'shutdown', cmd: {} });
    h.run(A, B);
    // A peer that adds after both Shutdowns breaks the protocol: refused, nothing changes.
    const add = {
      type: 'AddTlc' as const,
      value: {
        channelId: ccc.bytesFrom(A.ch.id),
        tlcId: 0n,
        amount: CKB,
        paymentHash: new Uint8Array(32),
        expiry: 1_800_000_000_000n,
        hashAlgorithm: 0,
        onionPacket: new Uint8Array(0),
      },
    };
    expect(() => step(A.ch, { type: 'peer', msg: add }, h.env())).toThrow(ChannelError);
    expect(() => step(A.ch, { type: 'peer', msg: add }, h.env())).toThrow(ADD_REFUSED);
  });
});
