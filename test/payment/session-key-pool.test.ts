/**
 * Onion session keys made ahead (`session-key-pool.ts`, on the curve worker of
 * `crypto/made-ahead.ts`): the triples are right (e·G and e·P), an onion built from one is byte for
 * byte the onion built from its session key alone, each triple is handed out once, and a first hop
 * that is not 33 bytes gets none. The stock's bookkeeping is `test/crypto/made-ahead.test.ts`'s.
 */
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { describe, expect, it } from 'vitest';
import { buildOnion, peelOnion } from '../../src/payment/onion/packet.ts';
import { SessionKeyPool } from '../../src/payment/onion/session-key-pool.ts';
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

  it('a first hop that is not 33 bytes gets no triple and asks the worker nothing', () => {
    const posted: unknown[] = [];
    const pool = new SessionKeyPool({
      worker: { post: (...a) => posted.push(a), onAnswer: () => {}, stop: () => {} },
    });
    expect(pool.take(fill(0x02, 32))).toBeUndefined();
    expect(posted).toHaveLength(0);
    expect(pool.take(B)).toBeUndefined();
    expect(posted).toHaveLength(1);
  });
});
