/**
 * Channel nonces made ahead (`nonce-pool.ts`): with the real worker thread, every pair handed out
 * is a BIP-327 nonce of the key (its public half is k1·G ‖ k2·G of its secret half), none twice,
 * and a MuSig2 session signed with one verifies; with a scripted other side, the pool's
 * bookkeeping (no stock without a worker, a late answer after an eviction or a stop, a failure).
 */
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { complete, signFirst, sorted2 } from '../../src/channel/musig.ts';
import { madeAheadOr, NoncePool } from '../../src/channel/nonce-pool.ts';
import {
  type BaseMultAnswer,
  type BaseMultiplier,
  curve,
  workerBaseMultiplier,
} from '../../src/crypto/index.ts';

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

/** A scripted other side: requests are kept, answered by the test. */
function scripted() {
  const posted: { id: number; scalars: Uint8Array }[] = [];
  let handler: (a: BaseMultAnswer) => void = () => {};
  let stopped = false;
  const maker: BaseMultiplier = {
    post: (id, scalars) => posted.push({ id, scalars }),
    onAnswer: (h) => {
      handler = h;
    },
    stop: () => {
      stopped = true;
    },
  };
  const answer = (i: number) => {
    const { id, scalars } = posted[i]!;
    const points = new Uint8Array((scalars.length / 32) * 33);
    for (let j = 0; j < scalars.length / 32; j++)
      points.set(curve().mulG(scalars.subarray(j * 32, j * 32 + 32)), j * 33);
    handler({ id, points });
  };
  return { maker, posted, answer, send: (a: BaseMultAnswer) => handler(a), stopped: () => stopped };
}

describe('NoncePool', () => {
  let pool: NoncePool | undefined;
  afterEach(() => pool?.stop());

  it('hands out BIP-327 pairs made on the worker, each once, that sign a MuSig2 session', async () => {
    pool = new NoncePool({ maker: workerBaseMultiplier(), batch: 16, lowWater: 4 });
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

  it('without a worker, or once it is unavailable, nothing comes from stock', () => {
    const none = new NoncePool();
    const k = keyPair();
    expect(none.take(k.pubkey, k.secret)).toBeUndefined();
    // The caller then makes the pair itself.
    expect(madeAheadOr(none)(k.pubkey, k.secret).public.length).toBe(66);

    const s = scripted();
    const reasons: string[] = [];
    pool = new NoncePool({ maker: s.maker, onUnavailable: (r) => reasons.push(r) });
    pool.take(k.pubkey, k.secret);
    s.send({ unavailable: 'no binding' });
    s.send({ unavailable: 'no binding' });
    expect(reasons).toEqual(['no binding']);
    s.answer(0);
    expect(pool.take(k.pubkey, k.secret)).toBeUndefined();
    expect(s.posted.length).toBe(1);
  });

  it('refills below the low water mark, in batches that grow; drops what an eviction, a failure or a stop left', () => {
    const s = scripted();
    pool = new NoncePool({ maker: s.maker, batch: 8, lowWater: 2, maxKeys: 1 });
    const a = keyPair();
    const b = keyPair();
    expect(pool.take(a.pubkey, a.secret)).toBeUndefined();
    expect(s.posted[0]!.scalars.length).toBe(4 * 64);
    // One request at a time per key.
    pool.take(a.pubkey, a.secret);
    expect(s.posted.length).toBe(1);
    s.answer(0);
    expect(pool.stocked(a.pubkey)).toBe(4);
    pool.take(a.pubkey, a.secret);
    pool.take(a.pubkey, a.secret);
    pool.take(a.pubkey, a.secret); // one left: below 2, the next batch (8) is asked for
    expect(s.posted.length).toBe(2);
    expect(s.posted[1]!.scalars.length).toBe(8 * 64);
    // b takes a's place (one key kept): a's answer, when it comes, is dropped.
    pool.take(b.pubkey, b.secret);
    s.answer(1);
    expect(pool.stocked(a.pubkey)).toBe(0);
    // A failure frees the key for a new request.
    s.send({ id: 3, failed: 'bad scalar' });
    expect(pool.stocked(b.pubkey)).toBe(0);
    pool.take(b.pubkey, b.secret);
    expect(s.posted.length).toBe(4);
    pool.stop();
    expect(s.stopped()).toBe(true);
    s.answer(3);
    expect(pool.stocked(b.pubkey)).toBe(0);
  });
});
