/**
 * TLC expiry decisions (pure), on channels built by two real machines: the reference's margin
 * (2/3 of the commitment delay), force close for an unresolved offered TLC and for a received one
 * we fulfilled but could not get acknowledged, the fulfil retry and the ExpiryTooSoon failure.
 */

import { ccc } from '@ckb-ccc/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildCommitment } from '../../src/channel/commitment.ts';
import { checkTlcExpiry, type ExpiryPolicy, tlcExpiryDelay } from '../../src/channel/expiry.ts';
import type { Effect } from '../../src/channel/step.ts';
import { CKB } from '../../src/channel/tx.ts';
import { committedView } from '../../src/channel/views.ts';
import { blake160, ckbHash } from '../../src/crypto/hash.ts';
import { openTestChain, type TestChain } from '../devchain/helpers.ts';
import { NOW, pairHarness } from './pair-harness.ts';

let t: TestChain;
let h: ReturnType<typeof pairHarness>;
beforeEach(() => {
  t = openTestChain();
  h = pairHarness(t);
});
afterEach(() => t.close());

const DEV: ExpiryPolicy = { msPerEpoch: 2000, checkIntervalMs: 3000 };
const MAINNET: ExpiryPolicy = { msPerEpoch: 4 * 3600_000, checkIntervalMs: 60_000 };
const EXPIRY = BigInt(NOW + 600_000);
const preimage = new Uint8Array(32).fill(5);

function offered() {
  const { A, B } = h.readyPair();
  h.feed(A, B, {
    type: 'addTlc',
    cmd: {
      amount: 30n * CKB,
      paymentHash: ckbHash(preimage),
      expiry: EXPIRY,
      hashAlgorithm: 0,
      onion: new Uint8Array(0),
    },
  });
  return { A, B };
}

describe('the expiry margin', () => {
  it('is 2/3 of the commitment delay, fractions of epochs included', () => {
    expect(tlcExpiryDelay(0x0000010000000001n, 2000)).toBe(1333n);
    // 3.5 epochs of 4 h: 9 h 20 min.
    expect(tlcExpiryDelay(0x20001000003n, 4 * 3600_000)).toBe(33_600_000n);
    expect(tlcExpiryDelay(1n, 4 * 3600_000)).toBe(9_600_000n);
  });
});

describe('an offered TLC nearing its expiry', () => {
  it('forces a close once inside the margin, and only for a TLC the peer has acknowledged', () => {
    const { A, B } = offered();
    // Announced only (the peer has not answered): nothing to close yet, as the reference.
    expect(checkTlcExpiry(A.ch, Number(EXPIRY), DEV)).toEqual([]);
    h.run(A, B);
    const margin = Number(tlcExpiryDelay(A.ch.delayEpoch, DEV.msPerEpoch));
    expect(checkTlcExpiry(A.ch, Number(EXPIRY) - margin - 1, DEV)).toEqual([]);
    const [action] = checkTlcExpiry(A.ch, Number(EXPIRY) - margin + 1, DEV);
    expect(action).toMatchObject({ type: 'forceClose', tlcIds: [0n] });
    // With mainnet epochs the same TLC is already inside the margin (160 min > 10 min).
    expect(checkTlcExpiry(A.ch, NOW, MAINNET)[0]?.type).toBe('forceClose');
    // The close puts A's latest commitment, holding the TLC, on chain.
    h.feed(A, B, { type: 'shutdown', cmd: { force: true } });
    const b = A.seen.find((e): e is Extract<Effect, { type: 'broadcast' }> => e.type === 'broadcast');
    expect(b?.tx.hash()).toBe(A.ch.latestCommitmentTxHash);
    expect(t.chain.transaction(b!.tx.hash())).toBeTruthy();
    // Closing: no more decisions.
    expect(checkTlcExpiry(A.ch, Number(EXPIRY), DEV)).toEqual([]);
  });

  it('still applies while a cooperative shutdown waits for the TLC', () => {
    const { A, B } = offered();
    h.run(A, B);
    h.feed(A, B, { type: 'shutdown', cmd: {} });
    h.run(A, B);
    expect(A.ch.state).toBe('SHUTTING_DOWN');
    expect(checkTlcExpiry(A.ch, Number(EXPIRY), DEV)[0]?.type).toBe('forceClose');
  });
});

describe('a received TLC', () => {
  it('fulfilled but unacknowledged (peer gone) forces a close near expiry: the preimage claims it on chain', () => {
    const { A, B } = offered();
    h.run(A, B);
    h.feed(B, A, { type: 'removeTlc', id: 0n, reason: { preimage } });
    A.inbox.length = 0; // A never hears of it
    expect(B.ch.tlcs[0]?.removal?.preimage).toBeDefined();
    expect(checkTlcExpiry(B.ch, NOW, DEV)).toEqual([]);
    expect(checkTlcExpiry(B.ch, Number(EXPIRY) - 1000, DEV)).toMatchObject([
      { type: 'forceClose', tlcIds: [0n] },
    ]);
    // B's latest commitment (the one a force close publishes) still holds the TLC: the state as it
    // stands does not describe it, the committed view does (what the watchtower settles with).
    const onChain = ccc.Transaction.fromBytes(B.ch.latestCommitmentTx!).outputs[0]!.lock.args;
    const hashOf = (c: typeof B.ch) => ccc.hexFrom(blake160(buildCommitment(c, false, h.env()).script));
    const committedHash = `0x${onChain.slice(2 + 72, 2 + 112)}`;
    expect(hashOf(B.ch)).not.toBe(committedHash);
    expect(hashOf(committedView(B.ch))).toBe(committedHash);
    const view = committedView(B.ch);
    expect(view.localBalance + view.remoteBalance + 30n * CKB).toBe(626n * CKB);
  });

  it('is fulfilled again with a preimage the node knows; failed near expiry unless forwarded', () => {
    const { A, B } = offered();
    h.run(A, B);
    const known = (p?: string, fwd = false) => ({ preimageFor: () => p, forwarded: () => fwd });
    const hex = `0x${Buffer.from(preimage).toString('hex')}`;
    expect(checkTlcExpiry(B.ch, NOW, DEV, known(hex))).toMatchObject([{ type: 'fulfil', preimage: hex }]);
    expect(checkTlcExpiry(B.ch, NOW, DEV, known())).toEqual([]);
    // Within margin + one check interval of the expiry: failed back (ExpiryTooSoon) …
    const near = Number(EXPIRY) - 4000;
    expect(checkTlcExpiry(B.ch, near, DEV, known())).toMatchObject([{ type: 'failReceived' }]);
    // … unless its fate is decided downstream.
    expect(checkTlcExpiry(B.ch, near, DEV, known(undefined, true))).toEqual([]);
  });
});
