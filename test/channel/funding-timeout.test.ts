/** `funding_timeout_seconds`: which openings may be dropped when their day is up. */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fundingTimedOut } from '../../src/channel/funding-timeout.ts';
import { withFlag } from '../../src/channel/state.ts';
import { openTestChain, type TestChain } from '../devchain/helpers.ts';
import { pairHarness } from './pair-harness.ts';

let t: TestChain;
beforeEach(() => {
  t = openTestChain();
});
afterEach(() => t.close());

const DAY = 86_400_000;

describe('funding timeout', () => {
  it('drops an unsigned opening after the timeout, never one whose funding we signed', () => {
    const h = pairHarness(t);
    const { A, B } = h.openingPair();
    const created = A.ch.createdAt;
    expect(fundingTimedOut(A.ch, created + DAY - 1, DAY)).toBe(false);
    expect(fundingTimedOut(A.ch, created + DAY, DAY)).toBe(true);
    // Our TxSignatures are out: the funding may still land, so the channel must wait for it.
    const signed = withFlag({ ...A.ch, state: 'AWAITING_TX_SIGNATURES' }, 'OUR_TX_SIGNATURES_SENT');
    expect(fundingTimedOut(signed, created + 2 * DAY, DAY)).toBe(false);
    h.run(A, B);
    expect(A.ch.state).toBe('AWAITING_CHANNEL_READY');
    expect(fundingTimedOut(A.ch, created + 2 * DAY, DAY)).toBe(false);
    // An external funding keeps its own deadline.
    const external = withFlag(
      { ...A.ch, state: 'NEGOTIATING_FUNDING', flags: [] },
      'AWAITING_EXTERNAL_FUNDING',
    );
    expect(fundingTimedOut(external, created + 2 * DAY, DAY)).toBe(false);
  });
});
