/**
 * The onions' ECDH on the curve thread (`ecdh-ahead.ts`): the point it gives is k·α exactly as the
 * peel would multiply it, the asks of one turn go as one message, and every ask is answered —
 * with null when there is no point to give (not a point, no thread, stopped), so that its caller
 * multiplies itself.
 */
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { describe, expect, it } from 'vitest';
import { type CurveThread, curveThread } from '../../src/crypto/index.ts';
import { EcdhAhead, type EcdhAnswer } from '../../src/payment/onion/ecdh-ahead.ts';

const SK = new Uint8Array(32).fill(0x42);
const alphas = [3, 4, 5].map((v) => secp256k1.getPublicKey(new Uint8Array(32).fill(v), true));
/** 33 bytes that are no point: prefix 02 and an x with no y on the curve (x = 5 has none). */
const NOT_A_POINT = Uint8Array.from([2, ...new Uint8Array(31), 5]);

const ask = (e: EcdhAhead, alpha: Uint8Array) =>
  new Promise<Uint8Array | null>((resolve) => e.ask(alpha, resolve));

/** The real thread, counting the messages sent to it. */
function counted(): { thread: CurveThread<EcdhAnswer>; sent: () => number } {
  const real = curveThread<EcdhAnswer>();
  let n = 0;
  return {
    thread: {
      send: (m) => {
        n++;
        real.send(m);
      },
      onAnswer: (h) => real.onAnswer(h),
      stop: () => real.stop(),
    },
    sent: () => n,
  };
}

describe('the onions ECDH made ahead', () => {
  it('gives k·α as the peel computes it, the asks of one turn in one message', async () => {
    const { thread, sent } = counted();
    const e = new EcdhAhead(SK, thread);
    try {
      const got = await Promise.all([...alphas.map((a) => ask(e, a)), ask(e, NOT_A_POINT)]);
      expect(sent()).toBe(1);
      alphas.forEach((a, i) => {
        expect(got[i]).toEqual(secp256k1.getSharedSecret(SK, a, true));
      });
      expect(got[3]).toBeNull();
      expect(e.outstanding).toBe(0);
      // A later turn's ask is another message.
      expect(await ask(e, alphas[0]!)).toEqual(secp256k1.getSharedSecret(SK, alphas[0]!, true));
      expect(sent()).toBe(2);
    } finally {
      e.stop();
    }
  });

  it('answers null when the thread cannot work, and says so once', async () => {
    let handler: (a: EcdhAnswer | { unavailable: string }) => void = () => {};
    const thread: CurveThread<EcdhAnswer> = {
      send: () => setImmediate(() => handler({ unavailable: 'no binding' })),
      onAnswer: (h) => {
        handler = h;
      },
      stop: () => {},
    };
    const told: string[] = [];
    const e = new EcdhAhead(SK, thread, (r) => told.push(r));
    expect(await Promise.all(alphas.map((a) => ask(e, a)))).toEqual([null, null, null]);
    expect(await ask(e, alphas[0]!)).toBeNull();
    expect(told).toEqual(['no binding']);
  });

  it('answers null to every ask still out when it stops, never in the asking turn', async () => {
    const thread: CurveThread<EcdhAnswer> = { send: () => {}, onAnswer: () => {}, stop: () => {} };
    const e = new EcdhAhead(SK, thread);
    const answers: (Uint8Array | null)[] = [];
    e.ask(alphas[0]!, (p) => answers.push(p));
    expect(answers).toEqual([]);
    await new Promise((r) => setImmediate(r)); // sent, never answered
    e.ask(alphas[1]!, (p) => answers.push(p)); // not sent yet
    expect(e.outstanding).toBe(2);
    e.stop();
    expect(answers).toEqual([null, null]);
    e.ask(alphas[2]!, (p) => answers.push(p));
    expect(answers).toHaveLength(2);
    await new Promise((r) => setImmediate(r));
    expect(answers).toEqual([null, null, null]);
  });
});
