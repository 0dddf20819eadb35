/**
 * Curve work made ahead (`crypto/made-ahead.ts`): the real worker multiplies what it is given
 * (k·G, and k·P when a point is named); the stock's bookkeeping, with a worker the test answers
 * by hand: one request at a time per key, refills below the low water mark in batches that grow,
 * each item handed out once, eviction of the key used least recently, a worker that fails or is
 * unavailable, a stop.
 */
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { describe, expect, it } from 'vitest';
import {
  type CurveJob,
  type CurveWorkAnswer,
  type CurveWorker,
  MadeAhead,
  startCurveWorker,
} from '../../src/crypto/index.ts';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const scalar = () => secp256k1.utils.randomSecretKey();

/** A worker the test answers by hand, with real multiplications. */
function manual() {
  const posted: { id: number; scalars: Uint8Array; point?: Uint8Array }[] = [];
  let handler: (a: CurveWorkAnswer) => void = () => {};
  let stopped = false;
  const worker: CurveWorker = {
    post: (id, scalars, point) => posted.push({ id, scalars: scalars.slice(), point }),
    onAnswer: (h) => {
      handler = h;
    },
    stop: () => {
      stopped = true;
    },
  };
  /** Answers the request posted `i`-th. */
  const answer = (i: number) => {
    const { id, scalars, point } = posted[i]!;
    const n = scalars.length / 32;
    const kG = new Uint8Array(n * 33);
    const kP = point ? new Uint8Array(n * 33) : undefined;
    for (let j = 0; j < n; j++) {
      const k = scalars.subarray(j * 32, j * 32 + 32);
      kG.set(secp256k1.getPublicKey(k, true), j * 33);
      kP?.set(secp256k1.getSharedSecret(k, point!, true), j * 33);
    }
    handler({ id, kG, kP });
  };
  return { worker, posted, answer, tell: (a: CurveWorkAnswer) => handler(a), stopped: () => stopped };
}

/** Items that are a scalar and its k·G. */
function job(count: number): CurveJob<Item> {
  const ks = Array.from({ length: count }, scalar);
  const scalars = new Uint8Array(count * 32);
  ks.forEach((k, i) => {
    scalars.set(k, i * 32);
  });
  return {
    scalars,
    build: (kG) => ks.map((k, i) => ({ k: hex(k), kG: hex(kG.subarray(i * 33, i * 33 + 33)) })),
  };
}

type Item = { k: string; kG: string };
const options = (worker: CurveWorker) => ({ worker, batch: 8, firstBatch: 2, lowWater: 2, maxKeys: 2 });

describe('MadeAhead', () => {
  it('the worker thread makes k·G, and k·P when asked', async () => {
    const w = startCurveWorker();
    try {
      const answers: CurveWorkAnswer[] = [];
      w.onAnswer((a) => answers.push(a));
      const ks = [scalar(), scalar(), scalar()];
      const scalars = new Uint8Array(96);
      ks.forEach((k, i) => {
        scalars.set(k, i * 32);
      });
      const P = secp256k1.getPublicKey(scalar(), true);
      w.post(1, scalars, P);
      w.post(2, scalars.slice(0, 32));
      w.post(3, new Uint8Array(32)); // zero is not a scalar
      const end = Date.now() + 5000;
      while (answers.length < 3 && Date.now() < end) await new Promise((r) => setTimeout(r, 5));
      const [a1, a2, a3] = answers as [
        Extract<CurveWorkAnswer, { kG: Uint8Array }>,
        Extract<CurveWorkAnswer, { kG: Uint8Array }>,
        Extract<CurveWorkAnswer, { failed: string }>,
      ];
      expect(a1.id).toBe(1);
      ks.forEach((k, i) => {
        expect(hex(a1.kG.subarray(i * 33, i * 33 + 33))).toBe(hex(secp256k1.getPublicKey(k, true)));
        expect(hex(a1.kP!.subarray(i * 33, i * 33 + 33))).toBe(hex(secp256k1.getSharedSecret(k, P, true)));
      });
      expect(a2.id).toBe(2);
      expect(a2.kP).toBeUndefined();
      expect(a3).toMatchObject({ id: 3, failed: expect.any(String) });
    } finally {
      w.stop();
    }
  });

  it('hands each item out once, refills below the low water mark one request at a time, in batches that grow', () => {
    const m = manual();
    const made = new MadeAhead<Item>(options(m.worker));
    expect(made.take('a', job)).toBeUndefined(); // no stock yet: the caller does the work
    expect(m.posted.map((p) => p.scalars.length / 32)).toEqual([2]);
    made.take('a', job);
    expect(m.posted).toHaveLength(1); // already asked
    m.answer(0);
    expect(made.stocked('a')).toBe(2);
    const first = made.take('a', job)!; // 1 left: below 2, the next batch (4) is asked for
    expect(first.kG).toBe(hex(secp256k1.getPublicKey(Buffer.from(first.k, 'hex'), true)));
    expect(m.posted.map((p) => p.scalars.length / 32)).toEqual([2, 4]);
    const second = made.take('a', job)!;
    expect(second.k).not.toBe(first.k);
    expect(made.take('a', job)).toBeUndefined(); // ran dry before the refill came
    m.answer(1);
    expect(made.stocked('a')).toBe(4);
    for (let i = 0; i < 3; i++) made.take('a', job); // down to 1: 8 asked for
    m.answer(2);
    for (let i = 0; i < 8; i++) made.take('a', job); // 9 down to 1: 8 again, the batch's bound
    expect(m.posted.map((p) => p.scalars.length / 32)).toEqual([2, 4, 8, 8]);
    expect(made.hits).toBe(13);
    expect(made.misses).toBe(3);
  });

  it('keeps stocks for at most maxKeys keys, dropping the one used least recently and what was asked for it', () => {
    const m = manual();
    const made = new MadeAhead<Item>(options(m.worker));
    made.take('a', job);
    m.answer(0);
    made.take('b', job);
    m.answer(1);
    made.take('a', job); // 1 left: a's refill is asked for (request 2)
    made.take('c', job); // b is the least recent: it goes
    expect(made.stocked('b')).toBe(0);
    expect(made.stocked('a')).toBe(1);
    made.take('b', job); // now a is the least recent: it goes, with its refill on the way
    m.answer(2);
    expect(made.stocked('a')).toBe(0);
    expect(m.posted).toHaveLength(5);
  });

  it('a failed request frees the key for a new one; an unavailable worker leaves every stock empty for good', () => {
    const m = manual();
    const reasons: string[] = [];
    const made = new MadeAhead<Item>({ ...options(m.worker), onUnavailable: (r) => reasons.push(r) });
    made.take('a', job);
    m.tell({ id: 1, failed: 'bad point' });
    expect(made.stocked('a')).toBe(0);
    made.take('a', job);
    expect(m.posted).toHaveLength(2);
    m.tell({ unavailable: 'no binding' });
    m.tell({ unavailable: 'no binding' });
    expect(reasons).toEqual(['no binding']);
    m.answer(1);
    expect(made.take('a', job)).toBeUndefined();
    expect(m.posted).toHaveLength(2);
  });

  it('a stop stops the worker and drops what comes after', () => {
    const m = manual();
    const made = new MadeAhead<Item>(options(m.worker));
    made.take('a', job);
    made.stop();
    expect(m.stopped()).toBe(true);
    m.answer(0);
    expect(made.stocked('a')).toBe(0);
  });
});
