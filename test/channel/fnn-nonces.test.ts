/**
 * fnn mode (docs/nonces.md): two machines both on fnn's nonce schedule open a channel and close
 * it cooperatively; the nonce ledger never lets a secret nonce produce a third partial signature.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MAX_NONCE_USES, NonceSpent, spendAllNonces, useNonce } from '../../src/channel/fnn-nonces.ts';
import { signFunding } from '../../src/channel/machine.ts';
import type { Channel } from '../../src/channel/state.ts';
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
const current = (ch: Channel) => ch.fnn?.mine[0];

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
    expect(calls).toBe(2);
  });

  it('opens to CHANNEL_READY on fnn schedule; a ready channel signs twice with its nonce, never three times', () => {
    const { A, B } = h.readyPair({ rules: 'fnn' });
    for (const s of [A, B]) {
      expect(s.ch.rules).toBe('fnn');
      expect(s.ch.nonces.mine).toEqual([]);
      // The opening's nonce signed twice (the peer's commitment, ours) and is gone; the next
      // one, advertised in our CommitmentSigned, is current with no use.
      expect(s.ch.fnn?.mine).toHaveLength(1);
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

  it('a backup copy keeps no secret nonce of an fnn channel', () => {
    const { A } = h.readyPair({ rules: 'fnn' });
    const copy = spendAllNonces(A.ch);
    expect(copy.fnn?.mine.every((n) => n.secret === '' && n.uses === MAX_NONCE_USES)).toBe(true);
    expect(() => signFunding(copy, msg(1))).toThrow(NonceSpent);
  });
});
