/**
 * Onions peeled ahead (`onion-prepeel.ts`): the peel is made only once the turn's output has
 * left, one onion a turn of the event loop, and what the relay takes is exactly what it would
 * have peeled itself — or nothing, and then it peels.
 */
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { describe, expect, it } from 'vitest';
import { bytesToHex } from '../../src/codec/index.ts';
import type { CurveThread } from '../../src/crypto/index.ts';
import { EcdhAhead, type EcdhAnswer } from '../../src/payment/onion/ecdh-ahead.ts';
import { buildOnion, peelOnion } from '../../src/payment/onion/packet.ts';
import { MAX_PREPEEL_QUEUE, OnionPrePeeler, type PeelMade } from '../../src/payment/onion-prepeel.ts';
import { hop } from './hop-data-fixture.ts';

const fill = (v: number, n = 32) => new Uint8Array(n).fill(v);
const SK_B = fill(0x42);
const B = secp256k1.getPublicKey(SK_B, true);
const C = secp256k1.getPublicKey(fill(0x43), true);

/** A TLC's onion for B: B forwards it to C (`forward`), or B is the final hop. */
function tlcFor(n: number, forward = false) {
  const paymentHash = fill(n);
  const hops = forward
    ? [hop({ nextHop: B }), hop({ fundingTxHash: fill(0xaa), nextHop: C }), hop({})]
    : [hop({ nextHop: B }), hop({ amount: BigInt(n) })];
  return { onion: buildOnion(hops, paymentHash).packet, paymentHash: bytesToHex(paymentHash) };
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A pre-peeler whose "output has left" moment the test chooses; `made`: how each take was served. */
function prePeeler(ecdh?: EcdhAhead) {
  const deferred: (() => void)[] = [];
  const made: PeelMade[] = [];
  const p = new OnionPrePeeler(
    SK_B,
    (fn) => deferred.push(fn),
    ecdh,
    (m) => made.push(m),
  );
  const outputLeft = () => {
    for (const fn of deferred.splice(0)) fn();
  };
  return { p, outputLeft, deferred, made };
}

describe('onions peeled ahead', () => {
  it('peels nothing before the output has left, then gives what the relay would peel', async () => {
    const { p, outputLeft, deferred } = prePeeler();
    const final = tlcFor(1);
    const fwd = tlcFor(2, true);
    p.announced(final);
    p.announced(fwd);
    expect(deferred).toHaveLength(1); // one wake-up for the queue, not one per onion
    await turn();
    expect(p.waiting).toBe(2);
    outputLeft();
    // One onion a turn of the event loop.
    expect(p.waiting).toBe(1);
    await turn();
    expect(p.waiting).toBe(0);
    for (const t of [final, fwd]) {
      const ahead = p.take(t.onion, t.paymentHash);
      expect(ahead).toBeDefined();
      expect(ahead).toEqual(peelOnion(t.onion, SK_B, fill(t === final ? 1 : 2)));
    }
    expect(p.take(fwd.onion, fwd.paymentHash)).toBeUndefined();
  });

  it('gives a peel once, and only for the payment hash it was made with', async () => {
    const { p, outputLeft } = prePeeler();
    const a = tlcFor(3);
    const b = tlcFor(4);
    p.announced(a);
    p.announced(b);
    outputLeft();
    await turn();
    expect(p.take(a.onion, a.paymentHash)).toBeDefined();
    expect(p.take(a.onion, a.paymentHash)).toBeUndefined();
    // Another hash over the same bytes is another peel (the hash is the onion's associated data).
    expect(p.take(b.onion, a.paymentHash)).toBeUndefined();
    expect(p.take(b.onion, b.paymentHash)).toBeUndefined();
  });

  it('an onion taken before its turn is not peeled afterwards: the relay peeled it', async () => {
    const { p, outputLeft } = prePeeler();
    const a = tlcFor(5);
    const b = tlcFor(6);
    p.announced(a);
    p.announced(b);
    expect(p.take(b.onion, b.paymentHash)).toBeUndefined();
    expect(p.waiting).toBe(1);
    outputLeft();
    await turn();
    expect(p.waiting).toBe(0);
    expect(p.take(a.onion, a.paymentHash)).toBeDefined();
  });

  it('a bad onion is left for the relay to fail, and the queue goes on', async () => {
    const { p, outputLeft } = prePeeler();
    const bad = { onion: new Uint8Array(6566).fill(9), paymentHash: bytesToHex(fill(7)) };
    const good = tlcFor(8);
    p.announced(bad);
    p.announced(good);
    p.announced({ onion: new Uint8Array(0), paymentHash: good.paymentHash }); // no onion: ignored
    expect(p.waiting).toBe(2);
    outputLeft();
    await turn();
    await turn();
    expect(p.take(bad.onion, bad.paymentHash)).toBeUndefined();
    expect(p.take(good.onion, good.paymentHash)).toBeDefined();
  });

  it('waits for at most MAX_PREPEEL_QUEUE onions: past that, TLCs are peeled on commit', () => {
    const { p } = prePeeler();
    const t = tlcFor(9);
    for (let i = 0; i <= MAX_PREPEEL_QUEUE; i++)
      p.announced({ onion: t.onion.slice(), paymentHash: t.paymentHash });
    expect(p.waiting).toBe(MAX_PREPEEL_QUEUE);
  });

  describe('with the ECDH on a thread', () => {
    /**
     * A thread the test answers: `answer()` gives k·α for every request so far, with `wrong` a
     * point of another key (a peel made with it fails its HMAC), or none at all (`null`).
     */
    function heldThread() {
      let handler: (a: EcdhAnswer | { unavailable: string }) => void = () => {};
      const requests: { id: number; points: Uint8Array }[] = [];
      const thread: CurveThread<EcdhAnswer> = {
        send: (m) => requests.push(m as { id: number; points: Uint8Array }),
        onAnswer: (h) => {
          handler = h;
        },
        stop: () => {},
      };
      const answer = (how: 'right' | 'none' = 'right') => {
        for (const r of requests.splice(0)) {
          const kPs = new Uint8Array(r.points.length);
          if (how === 'right')
            for (let i = 0; i < r.points.length / 33; i++)
              kPs.set(secp256k1.getSharedSecret(SK_B, r.points.subarray(i * 33, i * 33 + 33), true), i * 33);
          handler({ id: r.id, kPs });
        }
      };
      return { ecdh: new EcdhAhead(SK_B, thread), requests, answer };
    }

    it('peels an onion only once its point is back, with the same result', async () => {
      const { ecdh, requests, answer } = heldThread();
      const { p, outputLeft, made } = prePeeler(ecdh);
      const final = tlcFor(10);
      const fwd = tlcFor(11, true);
      p.announced(final);
      p.announced(fwd);
      await turn();
      expect(requests).toHaveLength(1); // both α in one message
      outputLeft();
      await turn();
      expect(p.waiting).toBe(2); // nothing multiplied here meanwhile
      answer();
      await turn();
      await turn();
      expect(p.waiting).toBe(0);
      expect(p.take(final.onion, final.paymentHash)).toEqual(peelOnion(final.onion, SK_B, fill(10)));
      expect(p.take(fwd.onion, fwd.paymentHash)).toEqual(peelOnion(fwd.onion, SK_B, fill(11)));
      expect(made).toEqual(['ahead', 'ahead']);
    });

    it('a TLC that commits before its peel is peeled then with its point, or left to the relay', async () => {
      const { ecdh, answer } = heldThread();
      const { p, made } = prePeeler(ecdh);
      const a = tlcFor(12);
      const b = tlcFor(13);
      p.announced(a);
      await turn();
      answer();
      p.announced(b);
      // a's point is back, its peel not made (the output has not left): made now, the same.
      expect(p.take(a.onion, a.paymentHash)).toEqual(peelOnion(a.onion, SK_B, fill(12)));
      // b's point is still out: the relay peels it itself.
      expect(p.take(b.onion, b.paymentHash)).toBeUndefined();
      expect(made).toEqual(['point', 'none']);
    });

    it('an onion with no point from the thread is peeled here; a wrong one is an OnionError', async () => {
      const { ecdh, answer } = heldThread();
      const { p, outputLeft } = prePeeler(ecdh);
      const a = tlcFor(14);
      p.announced(a);
      await turn();
      answer('none');
      outputLeft();
      await turn();
      expect(p.take(a.onion, a.paymentHash)).toEqual(peelOnion(a.onion, SK_B, fill(14)));
      // A point that is not k·α for this key cannot pass the HMAC check.
      const wrong = secp256k1.getSharedSecret(fill(0x77), a.onion.subarray(1, 34), true);
      expect(() => peelOnion(a.onion, SK_B, fill(14), wrong)).toThrow(/HMAC/);
    });
  });
});
