/**
 * BIP-327 MuSig2 signing without tweaks, with the key aggregation context cached.
 *
 * @scure/btc-signer's musig2 recomputes key aggregation (two variable-base multiplications,
 * ~5 ms) in every Session and twice in deterministicSign, which made it the largest CPU cost of
 * a payment. A channel signs with the same two keys thousands of times, so the context (the
 * aggregate point Q and each key's coefficient) is computed once per key list and kept. The
 * arithmetic follows BIP-327 step by step; `test/crypto/musig2-fast.test.ts` checks every output
 * byte for byte against @scure/btc-signer.
 */

import { randomBytes } from 'node:crypto';
import { schnorr, secp256k1 } from '@noble/curves/secp256k1.js';
import { compressPoint, curve } from './curve.ts';

const Fn = secp256k1.Point.Fn;
const { taggedHash } = schnorr.utils;
const G = secp256k1.Point.BASE.toBytes(true);

const taggedInt = (tag: string, ...parts: Uint8Array[]): bigint =>
  Fn.create(Fn.fromBytes(taggedHash(tag, ...parts), true));
/** A compressed point's y is even when its prefix is 02. */
const hasEvenY = (p: Uint8Array): boolean => p[0] === 2;
const evenScalar = (p: Uint8Array, n: bigint): bigint => (hasEvenY(p) ? n : Fn.neg(n));
const hex = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');
/** k·P, with 0·P the point at infinity (null). */
const mul = (p: Uint8Array, k: bigint): Uint8Array | null =>
  Fn.is0(k) ? null : curve().mul(p, Fn.toBytes(k));
const mulG = (k: bigint): Uint8Array | null => (Fn.is0(k) ? null : curve().mulG(Fn.toBytes(k)));
/** The sum of points, null ones (infinity) left out; compressed. */
function add(...points: (Uint8Array | null)[]): Uint8Array | null {
  const ps = points.filter((p): p is Uint8Array => p !== null);
  if (ps.length === 0) return null;
  return ps.length === 1 ? compressPoint(ps[0]!) : curve().add(ps);
}
/**
 * As `mul` and `add`, for a point that goes on to the next operation: left uncompressed (65
 * bytes; a lone point as it came), which that operation then reads without a square root.
 */
const mulFull = (p: Uint8Array, k: bigint): Uint8Array | null =>
  Fn.is0(k) ? null : curve().mulFull(p, Fn.toBytes(k));
function addFull(...points: (Uint8Array | null)[]): Uint8Array | null {
  const ps = points.filter((p): p is Uint8Array => p !== null);
  if (ps.length === 0) return null;
  return ps.length === 1 ? ps[0]! : curve().addFull(ps);
}

export interface KeyAggContext {
  keys: Uint8Array[];
  /** The aggregate point Q, compressed. */
  Q: Uint8Array;
  /** xbytes(Q), the 32-byte x-only aggregate key. */
  xonly: Uint8Array;
  /** KeyAgg coefficient per key, by the key's hex. */
  coef: Map<string, bigint>;
}

const contexts = new Map<string, KeyAggContext>();

/** The key aggregation context of `keys` (33-byte compressed, in this order), memoised. */
export function keyAggContext(keys: Uint8Array[]): KeyAggContext {
  const id = keys.map(hex).join('');
  const hit = contexts.get(id);
  if (hit) return hit;
  if (keys.length < 1) throw new RangeError('key aggregation needs at least one key');
  const L = taggedHash('KeyAgg list', ...keys);
  const second = keys.find((k) => hex(k) !== hex(keys[0]!));
  const coef = new Map<string, bigint>();
  const terms: (Uint8Array | null)[] = [];
  for (const k of keys) {
    const h = hex(k);
    let a = coef.get(h);
    if (a === undefined) {
      a = second !== undefined && hex(second) === h ? 1n : taggedInt('KeyAgg coefficient', L, k);
      coef.set(h, a);
    }
    terms.push(mul(k, a));
  }
  const Q = add(...terms);
  if (!Q) throw new Error('the aggregate key is the point at infinity');
  const ctx: KeyAggContext = { keys: keys.map((k) => k.slice()), Q, xonly: Q.slice(1), coef };
  if (contexts.size >= 4096) contexts.clear();
  contexts.set(id, ctx);
  return ctx;
}

function decodeNonce(n: Uint8Array): { R1: Uint8Array; R2: Uint8Array } {
  if (n.length !== 66) throw new RangeError('a public nonce is 66 bytes');
  return { R1: n.subarray(0, 33), R2: n.subarray(33, 66) };
}

function aggNonceBytes(R1: Uint8Array | null, R2: Uint8Array | null): Uint8Array {
  const out = new Uint8Array(66);
  if (R1) out.set(R1, 0);
  if (R2) out.set(R2, 33);
  return out;
}

export interface SessionValues {
  ctx: KeyAggContext;
  b: bigint;
  /** The final nonce point, compressed. */
  R: Uint8Array;
  e: bigint;
  msg: Uint8Array;
}

/** GetSessionValues for the aggregate of the given public nonces. */
export function sessionValues(ctx: KeyAggContext, nonces: Uint8Array[], msg: Uint8Array): SessionValues {
  const ds = nonces.map(decodeNonce);
  return sessionOfPoints(
    ctx,
    ds.map((d) => d.R1),
    ds.map((d) => d.R2),
    msg,
  );
}

/** The same, from the signers' first and second nonce points (compressed or uncompressed). */
function sessionOfPoints(
  ctx: KeyAggContext,
  R1s: Uint8Array[],
  R2s: Uint8Array[],
  msg: Uint8Array,
): SessionValues {
  const R1full = addFull(...R1s);
  const R2full = addFull(...R2s);
  const R1 = R1full && compressPoint(R1full);
  const R2 = R2full && compressPoint(R2full);
  const b = taggedInt('MuSig/noncecoef', aggNonceBytes(R1, R2), ctx.xonly, msg);
  const R = add(R1full, R2full ? mulFull(R2full, b) : null) ?? G;
  const e = taggedInt('BIP0340/challenge', R.subarray(1), ctx.xonly, msg);
  return { ctx, b, R, e, msg };
}

function coefficient(ctx: KeyAggContext, pubkey: Uint8Array): bigint {
  const a = ctx.coef.get(hex(pubkey));
  if (a === undefined) throw new Error("the signer's key is not in the aggregation list");
  return a;
}

/** Sign: s = k1' + b·k2' + e·a·d' (primes: BIP-327's parity adjustments). */
export function partialSign(
  s: SessionValues,
  k1: bigint,
  k2: bigint,
  secret: Uint8Array,
  /** The signer's compressed key when the caller knows it (saves a multiplication). */
  knownPubkey?: Uint8Array,
): Uint8Array {
  const d0 = Fn.fromBytes(secret);
  if (Fn.is0(d0)) throw new Error('the secret key is zero');
  if (Fn.is0(k1) || Fn.is0(k2)) throw new Error('a secret nonce is zero');
  const pubkey = knownPubkey ?? mulG(d0)!;
  const a = coefficient(s.ctx, pubkey);
  const d = evenScalar(s.ctx.Q, d0);
  const k1e = evenScalar(s.R, k1);
  const k2e = evenScalar(s.R, k2);
  return Fn.toBytes(Fn.add(k1e, Fn.add(Fn.mul(s.b, k2e), Fn.mul(s.e, Fn.mul(a, d)))));
}

/** PartialSigVerifyInternal for one signer's partial signature, public nonce and key. */
export function partialVerify(
  s: SessionValues,
  partial: Uint8Array,
  pubNonce: Uint8Array,
  pubkey: Uint8Array,
): boolean {
  if (partial.length !== 32) return false;
  const sc = Fn.fromBytes(partial, true);
  if (!Fn.isValid(sc)) return false;
  const { R1, R2 } = decodeNonce(pubNonce);
  const reSum = add(R1, mulFull(R2, s.b));
  const Re = reSum && !hasEvenY(s.R) ? curve().negate(reSum) : reSum;
  const a = coefficient(s.ctx, pubkey);
  const g = evenScalar(s.ctx.Q, 1n);
  const left = mulG(sc);
  const right = add(Re, mulFull(pubkey, Fn.mul(s.e, Fn.mul(a, g))));
  if (!left || !right) return left === right;
  return Buffer.compare(left, right) === 0;
}

/** PartialSigAgg: the 64-byte BIP-340 signature. */
export function aggregatePartials(s: SessionValues, partials: Uint8Array[]): Uint8Array {
  let sum = 0n;
  for (const p of partials) {
    const v = Fn.fromBytes(p, true);
    if (!Fn.isValid(v)) throw new RangeError('a partial signature is out of range');
    sum = Fn.add(sum, v);
  }
  const out = new Uint8Array(64);
  out.set(s.R.subarray(1), 0);
  out.set(Fn.toBytes(sum), 32);
  return out;
}

/** The secret scalars of a BIP-327 secnonce (k1 ‖ k2 ‖ pubkey, 97 bytes). */
export function decodeSecretNonce(secnonce: Uint8Array): { k1: bigint; k2: bigint; pubkey: Uint8Array } {
  if (secnonce.length !== 97) throw new RangeError('a secret nonce is 97 bytes');
  return {
    k1: Fn.fromBytes(secnonce.subarray(0, 32), true),
    k2: Fn.fromBytes(secnonce.subarray(32, 64), true),
    pubkey: secnonce.subarray(64, 97),
  };
}

/**
 * DeterministicSign (no tweaks, no extra randomness): the nonce derives from the secret key,
 * the other signer's public nonce and the message, so it can never sign two messages.
 */
export function deterministicSign(
  secret: Uint8Array,
  otherNonce: Uint8Array,
  keys: Uint8Array[],
  msg: Uint8Array,
  /** The signer's compressed key when the caller knows it (`partialSign`). */
  knownPubkey?: Uint8Array,
): { partial: Uint8Array; nonce: Uint8Array } {
  const ctx = keyAggContext(keys);
  const len = new Uint8Array(8);
  new DataView(len.buffer).setBigUint64(0, BigInt(msg.length));
  const k = (i: number) =>
    taggedInt('MuSig/deterministic/nonce', secret, otherNonce, ctx.xonly, len, msg, Uint8Array.of(i));
  const k1 = k(0);
  const k2 = k(1);
  // Our nonce points stay uncompressed for the session (no square roots to read them back).
  const R1 = curve().mulGFull(Fn.toBytes(k1));
  const R2 = curve().mulGFull(Fn.toBytes(k2));
  const nonce = new Uint8Array(66);
  nonce.set(compressPoint(R1), 0);
  nonce.set(compressPoint(R2), 33);
  const other = decodeNonce(otherNonce);
  const s = sessionOfPoints(ctx, [R1, other.R1], [R2, other.R2], msg);
  return { partial: partialSign(s, k1, k2, secret, knownPubkey), nonce };
}

/**
 * BIP-327 NonceGen with fresh randomness and no optional inputs: a secret nonce
 * (k1 ‖ k2 ‖ pubkey, 97 bytes) and its public nonce (k1·G ‖ k2·G, 66 bytes). The secret key is
 * mixed in as BIP-327 does, so a weak random source alone does not repeat nonces.
 */
export function nonceGen(
  pubkey: Uint8Array,
  secret?: Uint8Array,
): { secret: Uint8Array; public: Uint8Array } {
  const { k1, k2 } = nonceScalars(pubkey, secret);
  return nonceOf(k1, k2, pubkey);
}

/**
 * NonceGen's secret half (the two scalars, 32 bytes each), for a caller that has the points
 * k1·G and k2·G made elsewhere (`nonceOf`): the hashing is cheap, the multiplications are not.
 */
export function nonceScalars(pubkey: Uint8Array, secret?: Uint8Array): { k1: Uint8Array; k2: Uint8Array } {
  const randPrime = randomBytes(32);
  const rand = secret ? xor32(secret, taggedHash('MuSig/aux', randPrime)) : randPrime;
  const k = (i: number) =>
    taggedInt(
      'MuSig/nonce',
      rand,
      Uint8Array.of(pubkey.length),
      pubkey,
      Uint8Array.of(0), // no aggregate key
      Uint8Array.of(0), // no message
      new Uint8Array(4), // no extra input
      Uint8Array.of(i),
    );
  const k1 = k(0);
  const k2 = k(1);
  if (Fn.is0(k1) || Fn.is0(k2)) throw new Error('a secret nonce is zero');
  return { k1: Fn.toBytes(k1), k2: Fn.toBytes(k2) };
}

/**
 * The nonce of two secret scalars: secret k1 ‖ k2 ‖ pubkey, public k1·G ‖ k2·G. `points`, when
 * given, is that public nonce as made elsewhere (66 bytes); it is taken as it is.
 */
export function nonceOf(
  k1: Uint8Array,
  k2: Uint8Array,
  pubkey: Uint8Array,
  points?: Uint8Array,
): { secret: Uint8Array; public: Uint8Array } {
  const out = { secret: new Uint8Array(97), public: new Uint8Array(66) };
  out.secret.set(k1, 0);
  out.secret.set(k2, 32);
  out.secret.set(pubkey, 64);
  if (points) out.public.set(points);
  else {
    out.public.set(curve().mulG(k1), 0);
    out.public.set(curve().mulG(k2), 33);
  }
  return out;
}

function xor32(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(32);
  for (let i = 0; i < 32; i++) out[i] = a[i]! ^ b[i]!;
  return out;
}
