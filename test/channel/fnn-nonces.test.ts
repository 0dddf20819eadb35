/**
 * fnn mode (docs/nonces.md): two machines both on fnn's nonce schedule open a channel and close
 * it cooperatively; the nonce ledger never lets a secret nonce produce a third partial signature.
 */
import { ccc } from '@ckb-ccc/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { signFunding } from '../../src/channel/commitment.ts';
import { MAX_NONCE_USES, NonceSpent, spendAllNonces, useNonce } from '../../src/channel/fnn-nonces.ts';
import { step } from '../../src/channel/machine.ts';
import { reestablishMessage } from '../../src/channel/reestablish.ts';
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

const msg = (n: number) => new Uint8Array(32).fill(n);
const current = (ch: Channel) => ch.fnn?.mine.find((n) => n.public === ch.fnn?.current);
const ownNonce = (ch: Channel) => ch.fnn?.mine.find((n) => n.public === ch.fnn?.own?.myNonce);
const preimage = new Uint8Array(32).fill(7);
const tlc = (amount: bigint) => ({
  amount,
  paymentHash: ckbHash(preimage),
  expiry: 1_800_000_000_000n,
  hashAlgorithm: 0,
  onion: new Uint8Array(0),
});
/** No secret nonce of the side has produced more than two partial signatures. */
const bounded = (ch: Channel) =>
  [...(ch.fnn?.mine ?? []), ...(ch.fnn?.myRevoke ?? [])].every(
    (n) => n.uses <= MAX_NONCE_USES && (n.uses < MAX_NONCE_USES || n.secret === ''),
  );

describe('fnn mode nonces', () => {
  it('the ledger gives a nonce two uses, erases its secret with the second and refuses a third', () => {
    const list = [{ public: '0x02', secret: '0x03', uses: 0 }];
    let calls = 0;
    const sign = () => ++calls;
    const one = useNonce(list, sign);
    expect(one.list[0]).toEqual({ public: '0x02', secret: '0x03', uses: 1 });
    const two = useNonce(one.list, sign);
    expect(two.list[0]).toEqual({ public: '0x02', secret: '', uses: MAX_NONCE_USES });
    expect(() => useNonce(two.list, sign)).toThrow(NonceSpent);
    expect(() => useNonce(two.list, sign)).toThrow(
      'fnn mode: our nonce already signed twice; a third signature is refused',
    );
    // A nonce not in the ledger: refused, saying so.
    expect(() => useNonce(two.list, sign, '0x04')).toThrow(NonceSpent);
    expect(() => useNonce(two.list, sign, '0x04')).toThrow(/0x04 is not in the ledger/);
    expect(calls).toBe(2);
  });

  it('opens to CHANNEL_READY on fnn schedule; a ready channel signs twice with its nonce, never three times', () => {
    const { A, B } = h.readyPair({ rules: 'fnn' });
    for (const s of [A, B]) {
      expect(s.ch.rules).toBe('fnn');
      expect(s.ch.nonces.mine).toEqual([]);
      // The opening's nonce signed the peer's commitment and waits to complete ours (a use left);
      // the next one, advertised in our CommitmentSigned, is current with no use.
      expect(ownNonce(s.ch)?.uses).toBe(1);
      expect(current(s.ch)?.uses).toBe(0);
      expect(s.ch.latestCommitmentTx).toBeTruthy();
    }
    // Each side pairs with the nonce the other holds as current.
    expect(A.ch.fnn?.theirs).toBe(current(B.ch)?.public);
    expect(B.ch.fnn?.theirs).toBe(current(A.ch)?.public);
    // The bound: two partial signatures with the current nonce, the third refused.
    const one = signFunding(A.ch, msg(1));
    const two = signFunding(one.ch, msg(2));
    expect(current(two.ch)).toMatchObject({ uses: 2, secret: '' });
    expect(() => signFunding(two.ch, msg(3))).toThrow(NonceSpent);
  });

  it('closes cooperatively: each ClosingSigned is one counted use of the current nonce', () => {
    const { A, B } = h.readyPair({ rules: 'fnn' });
    h.feed(A, B, { type: 'shutdown', cmd: {} });
    h.run(A, B);
    for (const s of [A, B]) {
      expect(s.ch.shutdownTxHash).toBeTruthy();
      expect(current(s.ch)?.uses).toBe(1);
    }
    expect(A.ch.shutdownTxHash).toBe(B.ch.shutdownTxHash);
    expect(A.seen.some((e) => e.type === 'broadcast' && e.tx.hash() === A.ch.shutdownTxHash)).toBe(true);
  });

  it('TLC rounds both ways; each nonce stays within two signatures; a force close completes with the last use', () => {
    const { A, B } = h.readyPair({ rules: 'fnn' });
    h.feed(A, B, { type: 'addTlc', cmd: tlc(10n * CKB) });
    h.run(A, B);
    h.feed(B, A, { type: 'removeTlc', id: 0n, reason: { preimage } });
    h.run(A, B);
    h.feed(B, A, { type: 'addTlc', cmd: tlc(5n * CKB) });
    h.run(A, B);
    h.feed(A, B, { type: 'removeTlc', id: 0n, reason: { preimage } });
    h.run(A, B);
    for (const s of [A, B]) {
      expect(s.refused).toEqual([]);
      expect(s.ch.tlcs).toEqual([]);
      expect(s.ch.round).toBeNull();
      expect(bounded(s.ch)).toBe(true);
      expect(s.ch.commitmentNumbers).toEqual({ local: 6n, remote: 6n });
    }
    expect(A.ch.localBalance - B.ch.remoteBalance).toBe(0n);
    // The chain takes A's latest commitment, completed only now.
    const fc = step(A.ch, { type: 'shutdown', cmd: { force: true } }, h.env());
    expect(bounded(fc.ch)).toBe(true);
    const tx = fc.effects.find((e) => e.type === 'broadcast');
    if (tx?.type !== 'broadcast') throw new Error('no broadcast');
    tx.tx.cellDeps = h.env().fundingLock.cellDeps.map((d) => ccc.CellDep.from(d));
    expect(t.chain.sendTransaction(tx.tx)).toBe(tx.tx.hash());
  });

  it('a force close whose nonce already signed twice is refused (never a third signature)', () => {
    const { A, B } = h.readyPair({ rules: 'fnn' });
    // After a round A started, A's latest commitment waits on A's current nonce, unused.
    h.feed(A, B, { type: 'addTlc', cmd: tlc(5n * CKB) });
    h.run(A, B);
    expect(current(A.ch)?.public).toBe(A.ch.fnn?.own?.myNonce);
    expect(current(A.ch)?.uses).toBe(0);
    // Two signatures with it (a ClosingSigned, say, and one more): none left to complete with.
    const spent = signFunding(signFunding(A.ch, msg(8)).ch, msg(9));
    expect(() => step(spent.ch, { type: 'shutdown', cmd: { force: true } }, h.env())).toThrow(NonceSpent);
  });

  it('a round cut after any message resumes by replay after a reconnect; no nonce exceeds two uses', () => {
    const { A, B } = h.readyPair({ rules: 'fnn' });
    const reconnect = () => {
      A.inbox.length = 0;
      B.inbox.length = 0;
      B.inbox.push(reestablishMessage(A.ch));
      A.inbox.push(reestablishMessage(B.ch));
      h.runSteps(A, B, 1000);
    };
    for (let k = 0; k <= 9; k++) {
      h.feed(A, B, { type: 'addTlc', cmd: tlc(7n * CKB) });
      h.runSteps(A, B, k);
      reconnect();
      const id = B.ch.tlcs.find((x) => !x.offered && !x.removal)?.id as bigint;
      h.feed(B, A, { type: 'removeTlc', id, reason: { preimage } });
      h.runSteps(A, B, k);
      reconnect();
      for (const s of [A, B]) {
        expect(s.ch.round ?? null).toBeNull();
        expect(bounded(s.ch)).toBe(true);
      }
      expect(A.ch.commitmentNumbers).toEqual({
        local: B.ch.commitmentNumbers.remote,
        remote: B.ch.commitmentNumbers.local,
      });
    }
    expect([...A.refused, ...B.refused]).toEqual([]);
    expect(B.ch.localBalance).toBe(A.ch.remoteBalance);
    const fc = step(B.ch, { type: 'shutdown', cmd: { force: true } }, h.env());
    const tx = fc.effects.find((e) => e.type === 'broadcast');
    if (tx?.type !== 'broadcast') throw new Error('no broadcast');
    expect(t.chain.sendTransaction(tx.tx)).toBe(tx.tx.hash());
  });

  it('a backup copy keeps no secret nonce of an fnn channel', () => {
    const { A } = h.readyPair({ rules: 'fnn' });
    const copy = spendAllNonces(A.ch);
    expect(copy.fnn?.mine.every((n) => n.secret === '' && n.uses === MAX_NONCE_USES)).toBe(true);
    expect(() => signFunding(copy, msg(1))).toThrow(NonceSpent);
    // The refusal says why: erased by the restore, not signed twice (the copy cannot know).
    expect(() => signFunding(copy, msg(1))).toThrow(
      'fnn mode: our nonce was erased when the channel was restored from a backup (the live node may have used it since the copy); a new signature is refused',
    );
    // A nonce the live channel spent by its two uses says so; in a backup copy the same nonce is
    // refused as erased by the restore, like every other (the copy's counts are not trusted).
    const spent = signFunding(signFunding(A.ch, msg(2)).ch, msg(3)).ch;
    expect(() => signFunding(spent, msg(4))).toThrow(/already signed twice/);
    expect(() => signFunding(spendAllNonces(spent), msg(4))).toThrow(/restored from a backup/);
  });
});
