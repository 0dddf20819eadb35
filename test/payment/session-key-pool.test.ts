/**
 * Onion session keys made ahead (`session-key-pool.ts`, `session-keys-worker.mjs`): the worker's
 * triples are right (e·G and e·P), an onion built from one is byte for byte the onion built from
 * its session key alone, each triple is handed out once, and a pool with no stock never waits.
 */
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { describe, expect, it } from 'vitest';
import { buildOnion, peelOnion } from '../../src/payment/onion/packet.ts';
import { type KeyAnswer, type KeyMaker, SessionKeyPool } from '../../src/payment/onion/session-key-pool.ts';
import { hop } from './hop-data-fixture.ts';

const fill = (v: number, n = 32) => new Uint8Array(n).fill(v);
const SK_B = fill(0x42);
const B = secp256k1.getPublicKey(SK_B, true);
const C = secp256k1.getPublicKey(fill(0x43), true);
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

/** Waits until `cond` holds (the worker answers on its own thread). */
async function until(cond: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** A key maker the test answers by hand. */
function manualMaker() {
  const asked: { peer: Uint8Array; count: number }[] = [];
  let handler: (a: KeyAnswer) => void = () => {};
  const maker: KeyMaker = {
    post: (peer, count) => asked.push({ peer, count }),
    onAnswer: (h) => {
      handler = h;
    },
    stop: () => {},
  };
  /** Answers the oldest request with real triples. */
  const answer = () => {
    const { peer, count } = asked.shift()!;
    const keys = new Uint8Array(count * 32);
    const alphas = new Uint8Array(count * 33);
    const points = new Uint8Array(count * 33);
    for (let i = 0; i < count; i++) {
      const e = secp256k1.utils.randomSecretKey();
      keys.set(e, i * 32);
      alphas.set(secp256k1.getPublicKey(e, true), i * 33);
      points.set(secp256k1.getSharedSecret(e, peer, true), i * 33);
    }
    handler({ peer, keys, alphas, points });
  };
  return { maker, asked, answer, tell: (a: KeyAnswer) => handler(a) };
}

describe('onion session keys made ahead', () => {
  it('the worker makes e, e·G and e·P, and the onion built from them is the onion of e', async () => {
    const pool = new SessionKeyPool({ batch: 8, lowWater: 4 });
    try {
      expect(pool.take(B)).toBeUndefined(); // no stock yet: the payment makes its own
      await until(() => pool.stocked(B) > 0);
      const hops = [hop({ nextHop: B }), hop({ fundingTxHash: fill(0xaa), nextHop: C }), hop({})];
      const seen = new Set<string>();
      for (let i = 0; i < 6; i++) {
        const t = pool.take(B)!;
        expect(t).toBeDefined();
        expect(hex(t.alpha)).toBe(hex(secp256k1.getPublicKey(t.sessionKey, true)));
        expect(hex(t.point)).toBe(hex(secp256k1.getSharedSecret(t.sessionKey, B, true)));
        seen.add(hex(t.sessionKey));
        const ahead = buildOnion(hops, fill(5), { firstLayer: t });
        const plain = buildOnion(hops, fill(5), { sessionKey: t.sessionKey });
        expect(hex(ahead.packet)).toBe(hex(plain.packet));
        expect(ahead.sharedSecrets.map(hex)).toEqual(plain.sharedSecrets.map(hex));
        // And B reads it.
        expect(peelOnion(ahead.packet, SK_B, fill(5)).next).not.toBeNull();
      }
      expect(seen.size).toBe(6);
      // A triple made for another first hop is not used: the onion is made from a fresh key.
      const forB = pool.take(B)!;
      const toC = [hop({ nextHop: C }), hop({})];
      const built = buildOnion(toC, fill(5), { firstLayer: forB });
      expect(hex(built.sessionKey)).not.toBe(hex(forB.sessionKey));
      expect(peelOnion(built.packet, fill(0x43), fill(5)).next).toBeNull();
    } finally {
      pool.stop();
    }
  });

  it('hands each triple out once, refills below the low water mark, one request at a time', () => {
    const m = manualMaker();
    const pool = new SessionKeyPool({ batch: 4, lowWater: 2, maker: m.maker });
    expect(pool.take(B)).toBeUndefined();
    expect(m.asked).toHaveLength(1);
    expect(pool.take(B)).toBeUndefined();
    expect(m.asked).toHaveLength(1); // already asked
    m.answer();
    const keys = [pool.take(B), pool.take(B)].map((t) => hex(t!.sessionKey));
    expect(m.asked).toHaveLength(0); // 2 left: not below 2
    const third = pool.take(B)!;
    expect(m.asked).toHaveLength(1); // 1 left: refill asked
    keys.push(hex(third.sessionKey), hex(pool.take(B)!.sessionKey));
    expect(new Set(keys).size).toBe(4);
    expect(pool.take(B)).toBeUndefined(); // ran dry before the refill came
    m.answer();
    expect(pool.stocked(B)).toBe(4);
    // Another first hop has a stock of its own.
    expect(pool.take(C)).toBeUndefined();
    expect(hex(m.asked[0]!.peer)).toBe(hex(C));
  });

  it('asks for 8 triples for a new first hop, then twice as many each refill, up to the batch', () => {
    const m = manualMaker();
    const pool = new SessionKeyPool({ batch: 32, lowWater: 64, maker: m.maker });
    const sizes: number[] = [];
    for (let i = 0; i < 4; i++) {
      pool.take(B);
      sizes.push(m.asked[0]!.count);
      m.answer();
    }
    expect(sizes).toEqual([8, 16, 32, 32]);
  });

  it('keeps stocks for at most maxPeers first hops, dropping the one used least recently', () => {
    const m = manualMaker();
    const pool = new SessionKeyPool({ batch: 2, lowWater: 1, maxPeers: 2, maker: m.maker });
    const D = secp256k1.getPublicKey(fill(0x44), true);
    pool.take(B);
    m.answer();
    pool.take(C);
    m.answer();
    expect(pool.stocked(B)).toBe(2);
    pool.take(B); // B used after C: C is the least recent
    pool.take(D);
    expect(pool.stocked(C)).toBe(0);
    expect(pool.stocked(B)).toBe(1);
  });

  it('once the worker cannot make keys, the pool stays empty and asks nothing more', () => {
    const m = manualMaker();
    const reasons: string[] = [];
    const pool = new SessionKeyPool({ maker: m.maker, onUnavailable: (r) => reasons.push(r) });
    pool.take(B);
    m.tell({ unavailable: 'no binding' });
    expect(reasons).toEqual(['no binding']);
    m.asked.length = 0;
    expect(pool.take(B)).toBeUndefined();
    expect(m.asked).toHaveLength(0);
  });

  it('a first hop that is not a point gets no stock, and is asked for again later', () => {
    const m = manualMaker();
    const pool = new SessionKeyPool({ maker: m.maker });
    const notAPoint = fill(0x05, 33);
    pool.take(notAPoint);
    m.asked.length = 0;
    m.tell({ peer: notAPoint, failed: 'bad point' });
    expect(pool.take(notAPoint)).toBeUndefined();
    expect(m.asked).toHaveLength(1);
  });
});
