/**
 * Pipelined channels through the channel machine (`machine.ts` → `pipelined-step.ts`), two pure
 * machines on the in-process dev chain: TLC commands and batches, the answer to a
 * CommitmentSigned carrying our own, the CommitmentSigned that only the peer's fulfils wait for
 * held back, a reconnection in the middle of the traffic, and a cooperative close with a TLC
 * pending.
 */
import type { ccc } from '@ckb-ccc/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { step } from '../../src/channel/machine.ts';
import { startPipelined } from '../../src/channel/pipelined.ts';
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

const preimageOf = (n: number) => new Uint8Array(32).fill(n);
const tlc = (amount: bigint, n = 7) => ({
  amount,
  paymentHash: ckbHash(preimageOf(n)),
  expiry: 1_800_000_000_000n,
  hashAlgorithm: 0,
  onion: new Uint8Array(0),
});

function pipelinedPair(): { A: Side; B: Side } {
  const { A, B } = h.readyPair();
  A.ch = startPipelined(A.ch);
  B.ch = startPipelined(B.ch);
  return { A, B };
}

const notices = (s: Side) => s.seen.flatMap((e) => (e.type === 'tlc' ? [e.notice.type] : []));
const sentTypes = (s: Side) => s.sent.map((m) => m.type);

describe('pipelined channels in the machine', () => {
  it('a batch of adds goes with one CommitmentSigned, and the answer carries RevokeAndAck + CommitmentSigned', () => {
    const { A, B } = pipelinedPair();
    const cmds = [1, 2, 3].map((n) => ({ type: 'addTlc' as const, cmd: tlc(BigInt(n) * CKB, n) }));
    h.feed(A, B, { type: 'tlcBatch', cmds });
    expect(sentTypes(A)).toEqual(['AddTlc', 'AddTlc', 'AddTlc', 'CommitmentSigned']);
    h.run(A, B);
    expect(sentTypes(B)).toEqual(['TxComplete', 'RevokeAndAck', 'CommitmentSigned', 'TxComplete']);
    expect(notices(B)).toEqual(['announced', 'announced', 'announced', 'received', 'received', 'received']);
    // B settles all three; A's preimages come with the RemoveTlcs.
    h.feed(B, A, {
      type: 'tlcBatch',
      cmds: [0n, 1n, 2n].map((id) => ({
        type: 'removeTlc' as const,
        id,
        reason: { preimage: preimageOf(Number(id) + 1) },
      })),
    });
    h.run(A, B);
    // A answered with its RevokeAndAck alone: a CommitmentSigned covering only the peer's
    // fulfils waits (for A's next updates, or the service's timer: `deferred-sign.ts`).
    expect(notices(A)).toEqual(['preimage', 'preimage', 'preimage']);
    expect(A.sent.at(-1)?.type).toBe('RevokeAndAck');
    h.feed(A, B, { type: 'signCommitment' });
    h.run(A, B);
    expect(notices(A)).toEqual(['preimage', 'preimage', 'preimage', 'fulfilled', 'fulfilled', 'fulfilled']);
    expect([A.ch.tlcs, B.ch.tlcs]).toEqual([[], []]);
    expect(A.ch.localBalance).toBe(B.ch.remoteBalance);
  });

  it('goes on after a reconnection that cut the traffic in the middle', () => {
    const { A, B } = pipelinedPair();
    h.feed(A, B, { type: 'addTlc', cmd: tlc(5n * CKB) });
    h.runSteps(A, B, 2); // B has the add and the signature, its answer is lost
    A.inbox.length = 0;
    B.inbox.length = 0;
    h.feed(A, B, { type: 'reconnected' });
    h.feed(B, A, { type: 'reconnected' });
    h.run(A, B);
    expect(notices(B)).toContain('received');
    expect(B.ch.tlcs.map((x) => x.added)).toEqual(['committed']);
    expect([A.ch.pipelined?.log.awaitingRevoke, B.ch.pipelined?.log.awaitingRevoke]).toEqual([false, false]);
  });

  it('closes cooperatively once the pending TLC is settled, paying each side exactly', () => {
    const { A, B } = pipelinedPair();
    h.feed(A, B, { type: 'addTlc', cmd: tlc(100n * CKB) });
    h.run(A, B);
    h.feed(A, B, { type: 'shutdown', cmd: {} });
    h.run(A, B);
    expect([A.ch.state, B.ch.state]).toEqual(['SHUTTING_DOWN', 'SHUTTING_DOWN']);
    expect(() => step(A.ch, { type: 'addTlc', cmd: tlc(CKB) }, h.env())).toThrow(/ShuttingDown/);
    h.feed(B, A, { type: 'removeTlc', id: 0n, reason: { preimage: preimageOf(7) } });
    h.run(A, B);
    h.feed(A, B, { type: 'signCommitment' }); // the deferred CommitmentSigned (`deferred-sign.ts`)
    h.run(A, B);
    for (const s of [A, B]) expect(s.ch.flags).toContain('WAITING_COMMITMENT_CONFIRMATION');
    const b = A.seen.find(
      (e): e is Extract<Effect, { type: 'broadcast' }> =>
        e.type === 'broadcast' && e.tx.hash() === A.ch.shutdownTxHash,
    );
    const tx = b?.tx as ccc.Transaction;
    expect(t.chain.transaction(tx.hash())).toBeTruthy();
    const fee = 750n * CKB - tx.outputs.reduce((x, o) => x + o.capacity, 0n);
    const paid = (lock: ccc.Script) => tx.outputs.find((o) => o.lock.eq(lock))?.capacity;
    expect(paid(lockOf(A.key))).toBe(400n * CKB - fee);
    expect(paid(lockOf(B.key))).toBe(350n * CKB);
  });
});
