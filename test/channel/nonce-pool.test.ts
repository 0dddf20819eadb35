/**
 * Channel nonces made ahead (`nonce-pool.ts`): with the real curve worker, every pair handed out
 * is a BIP-327 nonce of the key (its public half is k1·G ‖ k2·G of its secret half), none twice,
 * and a MuSig2 session signed with one verifies; without a worker no pair comes from stock. The
 * stock's bookkeeping is `test/crypto/made-ahead.test.ts`'s.
 */
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { complete, signFirst, sorted2 } from '../../src/channel/musig.ts';
import { madeAheadOr, NoncePool } from '../../src/channel/nonce-pool.ts';
import { curve, startCurveWorker } from '../../src/crypto/index.ts';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

function keyPair() {
  const secret = new Uint8Array(randomBytes(32));
  return { secret, pubkey: curve().mulG(secret) };
}

/** Takes until a pair comes from stock (the first takes find none: the worker is still at it). */
async function takeReady(pool: NoncePool, k: ReturnType<typeof keyPair>) {
  for (let i = 0; i < 200; i++) {
    const p = pool.take(k.pubkey, k.secret);
    if (p) return p;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error('no pair came from the worker');
}

describe('NoncePool', () => {
  let pool: NoncePool | undefined;
  afterEach(() => pool?.stop());

  it('hands out BIP-327 pairs made on the worker, each once, that sign a MuSig2 session', async () => {
    pool = new NoncePool({ worker: startCurveWorker(), batch: 16, lowWater: 4 });
    const a = keyPair();
    const b = keyPair();
    const seen = new Set<string>();
    await takeReady(pool, a);
    for (let i = 0; i < 120; i++) {
      const p = madeAheadOr(pool)(a.pubkey, a.secret);
      expect(p.secret.subarray(64)).toEqual(a.pubkey);
      expect(hex(p.public.subarray(0, 33))).toBe(hex(curve().mulG(p.secret.subarray(0, 32))));
      expect(hex(p.public.subarray(33))).toBe(hex(curve().mulG(p.secret.subarray(32, 64))));
      expect(seen.has(hex(p.secret))).toBe(false);
      seen.add(hex(p.secret));
      if (i % 10 === 0) await new Promise((r) => setTimeout(r, 2));
    }
    expect(pool.hits).toBeGreaterThan(60);
    // b signs first (deterministic nonce), a completes with a pair from the pool.
    const mine = await takeReady(pool, a);
    const keys = sorted2(a.pubkey, b.pubkey);
    const msg = new Uint8Array(randomBytes(32));
    const first = signFirst(b.secret, mine.public, keys, msg, b.pubkey);
    const sig = complete({
      myPubkey: a.pubkey,
      theirPubkey: b.pubkey,
      theirNonce: first.nonce,
      keys,
      msg,
      mySecret: a.secret,
      myNonce: mine,
      theirPartial: first.partial,
    });
    expect(sig.length).toBe(64);
  });

  it('without a worker nothing comes from stock, and the caller makes the pair', () => {
    const none = new NoncePool();
    const k = keyPair();
    expect(none.take(k.pubkey, k.secret)).toBeUndefined();
    const p = madeAheadOr(none)(k.pubkey, k.secret);
    expect(hex(p.public.subarray(0, 33))).toBe(hex(curve().mulG(p.secret.subarray(0, 32))));
    expect(none.hits + none.misses).toBe(0);
  });
});
