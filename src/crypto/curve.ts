/**
 * The secp256k1 group operations under MuSig2 and Schnorr verification, on compressed points
 * (33 bytes) and 32-byte big-endian scalars. Two backends with the same results: libsecp256k1
 * through the `secp256k1` package's native binding (prebuilt, loaded from the package; ~10–20×
 * faster per multiplication), and @noble/curves in pure JS, used when the binding cannot load
 * (said once in the log by whoever calls `curveBackend()`). `STRAND_CURVE=noble` forces the
 * fallback (for comparisons and tests).
 *
 * The point at infinity is `null`: it has no compressed encoding.
 *
 * Every operation also reads uncompressed points (65 bytes), and the `…Full` ones write them: a
 * point passed from one operation to the next that way is not decompressed again (a square root,
 * as long as a native addition of two points). `compressPoint` gives its 33 bytes.
 */
import { createRequire } from 'node:module';
import { schnorr, secp256k1 } from '@noble/curves/secp256k1.js';

export interface Curve {
  readonly name: 'libsecp256k1' | 'noble';
  /** k·G; k in [1, n). */
  mulG(k: Uint8Array): Uint8Array;
  /** k·P; k in [1, n). Throws on a point that does not decode. */
  mul(p: Uint8Array, k: Uint8Array): Uint8Array;
  /** The sum of the points, or null for the point at infinity. */
  add(points: Uint8Array[]): Uint8Array | null;
  negate(p: Uint8Array): Uint8Array;
  /** As `mulG`, `mul` and `add`, the result uncompressed (65 bytes). */
  mulGFull(k: Uint8Array): Uint8Array;
  mulFull(p: Uint8Array, k: Uint8Array): Uint8Array;
  addFull(points: Uint8Array[]): Uint8Array | null;
  /** Whether `p` decodes to a point of the curve (33-byte compressed or 65-byte uncompressed). */
  isPoint(p: Uint8Array): boolean;
  /**
   * a·X + g·G, compressed, where X is the point with x-coordinate `x` (32 bytes) and an even y
   * (BIP-340's lift_x); a and g in [1, n). Null at infinity; throws when no point has that x.
   */
  mulAddLiftX(x: Uint8Array, a: Uint8Array, g: Uint8Array): Uint8Array | null;
}

interface NativeSecp256k1 {
  publicKeyCreate(seckey: Uint8Array, compressed: boolean): Uint8Array;
  publicKeyTweakMul(pubkey: Uint8Array, tweak: Uint8Array, compressed: boolean): Uint8Array;
  publicKeyCombine(pubkeys: Uint8Array[], compressed: boolean): Uint8Array;
  publicKeyNegate(pubkey: Uint8Array, compressed: boolean): Uint8Array;
  publicKeyVerify(pubkey: Uint8Array): boolean;
  ecdsaRecover(sig64: Uint8Array, recid: number, msg32: Uint8Array, compressed: boolean): Uint8Array;
}

const Point = secp256k1.Point;
const { Fn } = Point;

/** lift_x(x): the point of x-coordinate `x` with an even y. */
const liftX = (x: Uint8Array): Uint8Array => Uint8Array.of(2, ...x);

/** a·X + g·G in two multiplications and an addition (any backend). */
function mulAddLiftXPlain(c: Curve, x: Uint8Array, a: Uint8Array, g: Uint8Array): Uint8Array | null {
  return c.add([c.mulFull(liftX(x), a), c.mulGFull(g)]);
}

function nobleSum(points: Uint8Array[], compressed: boolean): Uint8Array | null {
  let sum = Point.ZERO;
  for (const p of points) sum = sum.add(Point.fromBytes(p));
  return sum.equals(Point.ZERO) ? null : sum.toBytes(compressed);
}

export const nobleCurve: Curve = {
  name: 'noble',
  mulG: (k) => Point.BASE.multiply(Point.Fn.fromBytes(k)).toBytes(true),
  mul: (p, k) => Point.fromBytes(p).multiplyUnsafe(Point.Fn.fromBytes(k)).toBytes(true),
  add: (points) => nobleSum(points, true),
  mulGFull: (k) => Point.BASE.multiply(Point.Fn.fromBytes(k)).toBytes(false),
  mulFull: (p, k) => Point.fromBytes(p).multiplyUnsafe(Point.Fn.fromBytes(k)).toBytes(false),
  addFull: (points) => nobleSum(points, false),
  negate: (p) => Point.fromBytes(p).negate().toBytes(true),
  mulAddLiftX: (x, a, g) => mulAddLiftXPlain(nobleCurve, x, a, g),
  isPoint(p) {
    try {
      Point.fromBytes(p);
      return true;
    } catch {
      return false;
    }
  },
};

function nativeCurve(lib: NativeSecp256k1): Curve {
  const sum = (points: Uint8Array[], compressed: boolean): Uint8Array | null => {
    try {
      return lib.publicKeyCombine(points, compressed);
    } catch (e) {
      // libsecp256k1 refuses a sum at infinity; any other failure is a point that does not decode.
      for (const p of points) Point.fromBytes(p);
      if (/sum of the public keys is not valid/i.test((e as Error).message)) return null;
      throw e;
    }
  };
  const c: Curve = {
    name: 'libsecp256k1',
    mulG: (k) => lib.publicKeyCreate(k, true),
    mul: (p, k) => lib.publicKeyTweakMul(p, k, true),
    add: (points) => sum(points, true),
    mulGFull: (k) => lib.publicKeyCreate(k, false),
    mulFull: (p, k) => lib.publicKeyTweakMul(p, k, false),
    addFull: (points) => sum(points, false),
    negate: (p) => lib.publicKeyNegate(p, true),
    isPoint: (p) => lib.publicKeyVerify(p),
    mulAddLiftX(x, a, g) {
      // ECDSA public-key recovery computes r⁻¹·(s·R − z·G) in one variable-time double
      // multiplication, R being the point of x-coordinate r with the y parity of the recovery id.
      // With r = x (recovery id 0: even y), s = a·x and z = −g·x that is a·X + g·G. A BIP-340
      // verification so took 67 µs here, against 87 µs with k·G, k·P and their sum apart.
      const r = Fn.fromBytes(x, true);
      const sr = Fn.mul(Fn.fromBytes(a, true), r);
      // r must be a valid scalar (x ≥ n has odds of about 2⁻¹²⁸) and s non-zero.
      if (r === 0n || r >= Fn.ORDER || Fn.is0(sr)) return mulAddLiftXPlain(c, x, a, g);
      const sig = new Uint8Array(64);
      sig.set(x, 0);
      sig.set(Fn.toBytes(sr), 32);
      try {
        return lib.ecdsaRecover(sig, 0, Fn.toBytes(Fn.neg(Fn.mul(Fn.fromBytes(g, true), r))), true);
      } catch {
        // No point has that x, or the sum is at infinity: the plain way says which.
        return mulAddLiftXPlain(c, x, a, g);
      }
    },
  };
  return c;
}

let chosen: { curve: Curve; fallbackReason?: string } | undefined;

/** The backend in use, and why the native one is not, when it is not. */
export function curveBackend(): { curve: Curve; fallbackReason?: string } {
  if (chosen) return chosen;
  if (process.env.STRAND_CURVE === 'noble') {
    chosen = { curve: nobleCurve, fallbackReason: 'STRAND_CURVE=noble' };
    return chosen;
  }
  try {
    const require = createRequire(import.meta.url);
    chosen = { curve: nativeCurve(require('secp256k1/bindings') as NativeSecp256k1) };
  } catch (e) {
    chosen = {
      curve: nobleCurve,
      fallbackReason: `the native secp256k1 binding did not load: ${(e as Error).message}`,
    };
  }
  return chosen;
}

export const curve = (): Curve => curveBackend().curve;

/** The 33-byte encoding of an uncompressed point (65 bytes: 0x04, x, y); others as they are. */
export function compressPoint(p: Uint8Array): Uint8Array {
  if (p.length !== 65) return p;
  const out = new Uint8Array(33);
  out[0] = 2 | (p[64]! & 1);
  out.set(p.subarray(1, 33), 1);
  return out;
}

const N = Fn.ORDER;

/** BIP-340 verification on the chosen backend: s·G − e·P has an even y and the x of R. */
export function schnorrVerify(sig: Uint8Array, msg: Uint8Array, xonly: Uint8Array): boolean {
  if (sig.length !== 64 || xonly.length !== 32) return false;
  const r = sig.subarray(0, 32);
  const s = Fn.fromBytes(sig.subarray(32, 64), true);
  if (s >= N || Point.Fp.fromBytes(r, true) >= Point.Fp.ORDER) return false;
  const e = Fn.create(Fn.fromBytes(schnorr.utils.taggedHash('BIP0340/challenge', r, xonly, msg), true));
  const c = curve();
  try {
    let R: Uint8Array | null;
    if (s !== 0n && e !== 0n) R = c.mulAddLiftX(xonly, Fn.toBytes(N - e), Fn.toBytes(s));
    else if (s !== 0n) R = c.isPoint(liftX(xonly)) ? c.mulG(Fn.toBytes(s)) : null;
    else R = e !== 0n ? c.mul(liftX(xonly), Fn.toBytes(N - e)) : null;
    if (!R) return false;
    if (R[0] !== 2) return false; // BIP-340: R has an even y
    return Buffer.compare(R.subarray(1), r) === 0;
  } catch {
    return false; // xonly is not on the curve
  }
}
