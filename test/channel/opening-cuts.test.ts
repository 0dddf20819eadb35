/**
 * A restart at every point of the opening (pure machines, dev chain in process). After `k`
 * delivered messages both nodes "restart": their channels go through the store's serialisation,
 * the messages in flight are lost, and each side sends its ReestablishChannel as on a reconnect.
 * Whatever `k`, both sides end the same way: both CHANNEL_READY with the seed's balances, or the
 * opening aborted on both with no funding cell on chain (so no funds are locked).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { reestablishMessage } from '../../src/channel/reestablish.ts';
import { type Channel, deserializeChannel, serializeChannel } from '../../src/channel/state.ts';
import { CKB } from '../../src/channel/tx.ts';
import { openTestChain, type TestChain } from '../devchain/helpers.ts';
import { pairHarness, type Side } from './pair-harness.ts';

let t: TestChain;
let h: ReturnType<typeof pairHarness>;
beforeEach(() => {
  t = openTestChain();
  h = pairHarness(t, undefined, { likeService: true });
});
afterEach(() => t.close());

const restart = (s: Side) => {
  s.ch = deserializeChannel(serializeChannel(s.ch));
  s.inbox.length = 0;
};

const live = (c: Channel) => c.state !== 'CLOSED';

/** Confirms the funding when it is on chain, as each node's funding watcher would. */
function confirmFunding(A: Side, B: Side): void {
  for (let i = 0; i < 5; i++) t.chain.generateBlock();
  for (const [me, other] of [
    [A, B],
    [B, A],
  ] as const) {
    const hash = me.ch.fundingTxHash;
    if (me.ch.state === 'AWAITING_CHANNEL_READY' && hash && t.chain.transaction(hash))
      h.feed(me, other, { type: 'fundingConfirmed' });
  }
  h.run(A, B);
}

function fundingOnChain(...sides: Side[]): boolean {
  return sides.some((s) => !!s.ch.fundingTxHash && !!t.chain.transaction(s.ch.fundingTxHash));
}

describe('an opening cut by a restart of both nodes', () => {
  it('ends ready on both sides or aborted on both with nothing on chain, at every cut', () => {
    // The uncut opening, to know how many messages it takes.
    const whole = h.openingPair();
    const total = h.runSteps(whole.A, whole.B, 1_000);
    expect(total).toBeGreaterThan(4);

    const outcomes: string[] = [];
    for (let k = 0; k <= total; k++) {
      t.close();
      t = openTestChain();
      h = pairHarness(t, undefined, { likeService: true });
      const { A, B } = h.openingPair();
      h.runSteps(A, B, k);
      restart(A);
      restart(B);
      if (live(A.ch)) B.inbox.push(reestablishMessage(A.ch));
      if (live(B.ch)) A.inbox.push(reestablishMessage(B.ch));
      h.run(A, B);
      confirmFunding(A, B);

      const states = [A.ch.state, B.ch.state];
      if (states[0] === 'CHANNEL_READY' || states[1] === 'CHANNEL_READY') {
        expect(states, `cut after ${k} messages`).toEqual(['CHANNEL_READY', 'CHANNEL_READY']);
        expect([A.ch.localBalance, A.ch.remoteBalance], `cut after ${k}`).toEqual([438n * CKB, 188n * CKB]);
        expect([B.ch.localBalance, B.ch.remoteBalance], `cut after ${k}`).toEqual([188n * CKB, 438n * CKB]);
        // What the reestablish sent again was taken or quietly ignored, never refused.
        expect([...A.refused, ...B.refused], `cut after ${k}`).toEqual([]);
        outcomes.push('ready');
      } else {
        expect(states, `cut after ${k} messages`).toEqual(['CLOSED', 'CLOSED']);
        expect(fundingOnChain(A, B), `cut after ${k}: a funding cell is on chain`).toBe(false);
        outcomes.push('aborted');
      }
    }
    // Early cuts abort (nothing was signed); once the funding signatures are out, the opening completes.
    expect(outcomes[0]).toBe('aborted');
    expect(outcomes[total]).toBe('ready');
  });
});
