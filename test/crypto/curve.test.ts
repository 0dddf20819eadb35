/**
 * The curve backends agree byte for byte: libsecp256k1 (native) and @noble/curves, on random
 * scalars and points; BIP-340 verification agrees with noble's on valid, altered and foreign
 * signatures. `FUZZ_RUNS` raises the number of cases.
 */
import { schnorr, secp256k1 } from '@noble/curves/secp256k1.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compressPoint, curveBackend, nobleCurve, schnorrVerify } from '../../src/crypto/curve.ts';

const runs = Number(process.env.FUZZ_RUNS ?? 200);
const hex = (b: Uint8Array | null) => (b ? Buffer.from(b).toString('hex') : 'infinity');
const N = secp256k1.Point.Fn.ORDER;
const scalar = fc.bigInt({ min: 1n, max: N - 1n }).map((k) => secp256k1.Point.Fn.toBytes(k));

describe('curve backends', () => {
  const { curve: native, fallbackReason } = curveBackend();

  it('loads the native binding on this machine', () => {
    expect(fallbackReason).toBeUndefined();
    expect(native.name).toBe('libsecp256k1');
  });

  it('k·G, k·P, P+Q and −P are the same bytes in both', () => {
    fc.assert(
      fc.property(scalar, scalar, scalar, (a, b, k) => {
        const P = nobleCurve.mulG(a);
        const Q = nobleCurve.mulG(b);
        expect(hex(native.mulG(a))).toBe(hex(P));
        expect(hex(native.mul(P, k))).toBe(hex(nobleCurve.mul(P, k)));
        expect(hex(native.add([P, Q]))).toBe(hex(nobleCurve.add([P, Q])));
        expect(hex(native.negate(P))).toBe(hex(nobleCurve.negate(P)));
      }),
      { numRuns: runs },
    );
  });

  it('the uncompressed (…Full) results are the same points, and read back without decompressing', () => {
    fc.assert(
      fc.property(scalar, scalar, scalar, (a, b, k) => {
        const P = nobleCurve.mulG(a);
        const Q = nobleCurve.mulG(b);
        for (const c of [native, nobleCurve]) {
          const Pf = c.mulGFull(a);
          expect(Pf.length).toBe(65);
          expect(hex(compressPoint(Pf))).toBe(hex(P));
          const kP = c.mulFull(Pf, k);
          expect(hex(compressPoint(kP))).toBe(hex(nobleCurve.mul(P, k)));
          // b = n − a sums to infinity (null): fast-check's edge values find it.
          const sum = c.addFull([Pf, c.mulGFull(b)]);
          expect(hex(sum && compressPoint(sum))).toBe(hex(nobleCurve.add([P, Q])));
          // Mixed encodings in, compressed out.
          expect(hex(c.add([kP, Q]))).toBe(hex(nobleCurve.add([nobleCurve.mul(P, k), Q])));
        }
        expect(compressPoint(P)).toBe(P);
      }),
      { numRuns: runs },
    );
    const P = nobleCurve.mulG(secp256k1.Point.Fn.toBytes(7n));
    for (const c of [native, nobleCurve])
      expect(c.addFull([c.mulGFull(secp256k1.Point.Fn.toBytes(7n)), c.negate(P)])).toBeNull();
  });

  it('a sum at infinity is null in both, and a point that does not decode throws in both', () => {
    const P = nobleCurve.mulG(secp256k1.Point.Fn.toBytes(7n));
    for (const c of [native, nobleCurve]) {
      expect(c.add([P, c.negate(P)])).toBeNull();
      const bad = Uint8Array.of(2, ...new Uint8Array(32).fill(0xff));
      expect(() => c.add([P, bad])).toThrow();
      expect(() => c.mul(bad, secp256k1.Point.Fn.toBytes(3n))).toThrow();
    }
  });

  it('say alike whether 33 bytes are a point: real points, random x (about half on the curve), bad prefixes', () => {
    fc.assert(
      fc.property(
        scalar,
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        fc.constantFrom(0, 1, 2, 3, 4, 0xff),
        (k, x, prefix) => {
          const P = nobleCurve.mulG(k);
          expect(native.isPoint(P)).toBe(true);
          expect(nobleCurve.isPoint(P)).toBe(true);
          const q = Uint8Array.of(prefix, ...x);
          expect(native.isPoint(q)).toBe(nobleCurve.isPoint(q));
        },
      ),
      { numRuns: runs },
    );
    expect(native.isPoint(Uint8Array.of(2, ...new Uint8Array(32).fill(0xff)))).toBe(false);
  });

  it('a·X + g·G for X = lift_x(x) is the same in both: random points, the sum at infinity, an x off the curve', () => {
    const Fn = secp256k1.Point.Fn;
    fc.assert(
      fc.property(scalar, scalar, scalar, (k, a, g) => {
        const x = nobleCurve.mulG(k).subarray(1);
        expect(hex(native.mulAddLiftX(x, a, g))).toBe(hex(nobleCurve.mulAddLiftX(x, a, g)));
        // With X = ±k·G (the sign of lift_x's even y), g = ∓a·k puts the sum at infinity.
        const even = nobleCurve.mulG(k)[0] === 2;
        const kk = even ? Fn.fromBytes(k) : Fn.neg(Fn.fromBytes(k));
        const zero = Fn.toBytes(Fn.neg(Fn.mul(Fn.fromBytes(a), kk)));
        expect(native.mulAddLiftX(x, a, zero)).toBeNull();
        expect(nobleCurve.mulAddLiftX(x, a, zero)).toBeNull();
      }),
      { numRuns: runs },
    );
    // 2²⁵⁶ − 1 is above both p and n, and 0 has no point: both throw.
    for (const x of [new Uint8Array(32).fill(0xff), new Uint8Array(32)]) {
      const one = Fn.toBytes(1n);
      expect(() => native.mulAddLiftX(x, one, one)).toThrow();
      expect(() => nobleCurve.mulAddLiftX(x, one, one)).toThrow();
    }
  });

  it('BIP-340 verification agrees with noble on valid, altered and foreign signatures', () => {
    fc.assert(
      fc.property(scalar, fc.uint8Array({ minLength: 32, maxLength: 32 }), fc.nat(63), (sk, msg, flip) => {
        const pk = schnorr.getPublicKey(sk);
        const sig = schnorr.sign(msg, sk);
        expect(schnorrVerify(sig, msg, pk)).toBe(true);
        const bad = sig.slice();
        bad[flip]! ^= 1;
        expect(schnorrVerify(bad, msg, pk)).toBe(schnorr.verify(bad, msg, pk));
        const other = schnorr.getPublicKey(secp256k1.utils.randomSecretKey());
        expect(schnorrVerify(sig, msg, other)).toBe(false);
      }),
      { numRuns: runs },
    );
  });
});
