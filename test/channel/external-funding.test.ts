/**
 * External funding between two pure channel machines on an in-process dev chain: the opener's
 * part paid from a third key's cells (the "external funder"), the frozen tx signed off-machine
 * and submitted; both TxSignatures orders; refusals that change nothing; the abort path.
 */
import { ccc } from '@ckb-ccc/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ChannelError } from '../../src/channel/errors.ts';
import { EXTERNAL_TIMEOUT_REASON, externalDeadline } from '../../src/channel/external-funding.ts';
import { step } from '../../src/channel/machine.ts';
import type { Channel } from '../../src/channel/state.ts';
import { fail } from '../../src/channel/step.ts';
import { CKB } from '../../src/channel/tx.ts';
import { hexToBytes } from '../../src/codec/hex.ts';
import { signSighashAll } from '../../src/crypto/sighash.ts';
import { cellsOf, KEY_A, KEY_B, lockOf, openTestChain, type TestChain } from '../devchain/helpers.ts';
import { pairHarness, type Side } from './pair-harness.ts';

const KEY_F = hexToBytes(`0x${'f3'.repeat(32)}`);
const NOW = 1_700_000_000_000;

let t: TestChain;
let h: ReturnType<typeof pairHarness>;
beforeEach(() => {
  t = openTestChain({}, [
    { lock: lockOf(KEY_A), capacity: 10_000n * CKB },
    { lock: lockOf(KEY_B), capacity: 10_000n * CKB },
    { lock: lockOf(KEY_F), capacity: 10_000n * CKB },
  ]);
  h = pairHarness(t, () => NOW);
});
afterEach(() => t.close());

const env = () => h.env();
const sighashCodeHash = () => lockOf(KEY_F).codeHash;

/** A opens with the funder paying `openAmount`; B accepts with `acceptAmount`; run to the frozen tx. */
function openExternal(openAmount: bigint, acceptAmount: bigint) {
  const { A, B, open, received } = h.openingPair({ openAmount, acceptAmount, externalFunder: KEY_F });
  expect(open.channelFlags).toBe(4);
  expect(received.external).toEqual({ submitted: false });
  h.run(A, B);
  return { A, B };
}

/** The user's signature of the frozen tx, as `sign_external_funding_tx` makes it. */
function userSigns(unsigned: Channel, key = KEY_F): ccc.Transaction {
  const tx = ccc.Transaction.fromBytes(unsigned.fundingTx!);
  signSighashAll(tx, [0], key);
  return tx;
}

function confirmAndReady(A: Side, B: Side) {
  for (let i = 0; i < 5; i++) t.chain.generateBlock();
  h.feed(A, B, { type: 'fundingConfirmed' });
  h.feed(B, A, { type: 'fundingConfirmed' });
  h.run(A, B);
}

describe('external funding between two machines', () => {
  it('parks both sides at AWAITING_EXTERNAL_FUNDING with a frozen tx and no signature sent', () => {
    const { A, B } = openExternal(500n * CKB, 250n * CKB);
    for (const s of [A, B]) {
      expect(s.ch.state).toBe('NEGOTIATING_FUNDING');
      expect(s.ch.flags).toEqual(['AWAITING_EXTERNAL_FUNDING']);
      expect(s.ch.external?.startedAt).toBe(NOW);
    }
    expect(A.ch.fundingTxHash).toBe(B.ch.fundingTxHash);
    expect(A.ch.external?.inputs).toBe(1);
    const tx = ccc.Transaction.fromBytes(A.ch.fundingTx!);
    expect(tx.outputs[0]!.capacity).toBe(750n * CKB);
    // The funder's change goes back to the funder's lock.
    expect(tx.outputs[1]!.lock.eq(lockOf(KEY_F))).toBe(true);
    const types = [...A.sent, ...B.sent].map((m) => m.type);
    expect(types).not.toContain('CommitmentSigned');
    expect(types).not.toContain('TxSignatures');
    expect(externalDeadline(A.ch, 300_000)).toBe(NOW + 300_000);
  });

  it('submitted and signed (acceptor signs first): CHANNEL_READY, 438/188, the funder paid 500 CKB', () => {
    const { A, B } = openExternal(500n * CKB, 250n * CKB);
    const funderBefore = cellsOf(t.chain, lockOf(KEY_F)).reduce((s, c) => s + c.output.capacity, 0n);
    const signed = userSigns(A.ch);
    h.feed(A, B, { type: 'submitFunding', tx: signed, sighashCodeHash: sighashCodeHash() });
    // The TxUpdate announcing the submission carries no witness of the funder.
    const update = B.inbox.find((m) => m.type === 'TxUpdate');
    expect(update?.type === 'TxUpdate' && update.value.tx.witnesses).toEqual([]);
    expect(update?.type === 'TxUpdate' && update.value.tx.hash()).toBe(signed.hash());
    expect(A.ch.state).toBe('SIGNING_COMMITMENT');
    expect(A.ch.external?.submitted).toBe(true);
    h.run(A, B);
    expect(A.ch.state).toBe('AWAITING_CHANNEL_READY');
    expect(B.ch.state).toBe('AWAITING_CHANNEL_READY');
    confirmAndReady(A, B);
    expect(A.ch.state).toBe('CHANNEL_READY');
    expect(B.ch.state).toBe('CHANNEL_READY');
    expect([A.ch.localBalance, A.ch.remoteBalance]).toEqual([438n * CKB, 188n * CKB]);
    expect([B.ch.localBalance, B.ch.remoteBalance]).toEqual([188n * CKB, 438n * CKB]);
    const cell = t.chain.liveCell({ txHash: A.ch.fundingTxHash!, index: 0 });
    expect(cell !== 'dead' && cell?.output.capacity).toBe(750n * CKB);
    const funderAfter = cellsOf(t.chain, lockOf(KEY_F)).reduce((s, c) => s + c.output.capacity, 0n);
    expect(funderBefore - funderAfter).toBe(500n * CKB + 5000n);
    // A's stored commitment is fully signed: the chain would take it.
    expect(A.ch.latestCommitmentTx).not.toBeNull();
  });

  it('the opener signing first (contributing less) releases the funder witnesses in TxSignatures', () => {
    const { A, B } = openExternal(100n * CKB, 250n * CKB);
    h.feed(A, B, { type: 'submitFunding', tx: userSigns(A.ch), sighashCodeHash: sighashCodeHash() });
    h.run(A, B);
    const sigs = A.sent.find((m) => m.type === 'TxSignatures');
    expect(sigs?.type === 'TxSignatures' && ccc.hexFrom(sigs.value.witnesses[0]!)).not.toBe('0x');
    confirmAndReady(A, B);
    expect(A.ch.state).toBe('CHANNEL_READY');
    expect([A.ch.localBalance, B.ch.localBalance]).toEqual([38n * CKB, 188n * CKB]);
  });

  it('an fnn opener announces the signed tx in TxUpdate: the acceptor, signing first, passes the funder witnesses on', () => {
    // fnn sends the user's signed tx in its TxUpdate and, when the acceptor signs first, takes the
    // acceptor's TxSignatures witnesses as the whole signed tx: they must hold the funder's.
    const { A, B } = openExternal(500n * CKB, 250n * CKB);
    const signed = userSigns(A.ch);
    h.feed(A, B, { type: 'submitFunding', tx: signed, sighashCodeHash: sighashCodeHash() });
    const i = B.inbox.findIndex((m) => m.type === 'TxUpdate');
    B.inbox[i] = { type: 'TxUpdate', value: { channelId: hexToBytes(B.ch.id), tx: signed } };
    h.run(A, B);
    const sigs = B.sent.find((m) => m.type === 'TxSignatures');
    expect(sigs?.type === 'TxSignatures' && ccc.hexFrom(sigs.value.witnesses[0]!)).toBe(signed.witnesses[0]);
    expect(B.ch.state).toBe('AWAITING_CHANNEL_READY');
    confirmAndReady(A, B);
    expect([A.ch.state, B.ch.state]).toEqual(['CHANNEL_READY', 'CHANNEL_READY']);
  });

  it('refuses a wrong, unsigned, foreign-signed or repeated submission, changing nothing', () => {
    const { A, B } = openExternal(500n * CKB, 250n * CKB);
    const before = structuredClone(A.ch);
    const submit = (tx: ccc.Transaction) =>
      step(A.ch, { type: 'submitFunding', tx, sighashCodeHash: sighashCodeHash() }, env());
    const other = userSigns(A.ch);
    other.outputs[1]!.capacity -= 1n;
    expect(() => submit(other)).toThrow(
      'Invalid parameter: Signed funding transaction raw data mismatch; only witnesses may change for external funding',
    );
    expect(() => submit(ccc.Transaction.fromBytes(A.ch.fundingTx!))).toThrow(
      'Invalid parameter: Signed funding transaction has no witness for the funding inputs',
    );
    expect(() => submit(userSigns(A.ch, KEY_A))).toThrow(
      'Invalid parameter: Signed funding transaction is not signed by the funding lock script',
    );
    expect(() => step(B.ch, { type: 'submitFunding', tx: userSigns(A.ch) }, env())).toThrow(
      'Invalid state: Channel is not configured for external funding',
    );
    expect(A.ch).toEqual(before);
    h.feed(A, B, { type: 'submitFunding', tx: userSigns(A.ch), sighashCodeHash: sighashCodeHash() });
    expect(() => submit(userSigns(A.ch))).toThrow(
      'Repeated processing message: Signed funding tx has already been submitted',
    );
  });

  it('a submission before the tx is frozen is refused with the state it is in', () => {
    const { A } = openExternal(500n * CKB, 250n * CKB);
    const early: Channel = { ...A.ch, state: 'COLLABORATING_FUNDING_TX', flags: ['OUR_TX_COMPLETE_SENT'] };
    expect(() => step(early, { type: 'submitFunding', tx: userSigns(A.ch) }, env())).toThrow(
      'Invalid state: Expected channel in AWAITING_EXTERNAL_FUNDING-compatible state, but got CollaboratingFundingTx(OUR_TX_COMPLETE_SENT)',
    );
  });

  it('the acceptor refuses an announced tx that is not the frozen one', () => {
    const { A, B } = openExternal(500n * CKB, 250n * CKB);
    const changed = ccc.Transaction.fromBytes(A.ch.fundingTx!);
    changed.outputs[1]!.capacity -= 1n;
    expect(() =>
      step(
        B.ch,
        { type: 'peer', msg: { type: 'TxUpdate', value: { channelId: hexToBytes(B.ch.id), tx: changed } } },
        env(),
      ),
    ).toThrow(ChannelError);
  });

  it('an abort while waiting (the timeout) closes both sides and spends nothing of the funder', () => {
    const { A, B } = openExternal(500n * CKB, 250n * CKB);
    const funderCells = cellsOf(t.chain, lockOf(KEY_F)).length;
    const r = fail(A.ch, EXTERNAL_TIMEOUT_REASON);
    A.ch = r.ch;
    h.perform(A, B, r.effects, []);
    h.run(A, B);
    for (const s of [A, B]) {
      expect(s.ch.state).toBe('CLOSED');
      expect(s.ch.flags).toEqual(['FUNDING_ABORTED']);
    }
    expect(A.ch.failureDetail).toBe(EXTERNAL_TIMEOUT_REASON);
    expect(externalDeadline(A.ch, 300_000)).toBeNull();
    expect(() => step(A.ch, { type: 'submitFunding', tx: userSigns(A.ch) }, env())).toThrow(
      'Invalid state: Expected channel in AWAITING_EXTERNAL_FUNDING-compatible state, but got Closed(FUNDING_ABORTED)',
    );
    for (let i = 0; i < 3; i++) t.chain.generateBlock();
    expect(cellsOf(t.chain, lockOf(KEY_F))).toHaveLength(funderCells);
  });
});
