/**
 * Per-channel keys as the reference derives them (`fiber-channel-protocol.md` §2): from a
 * node-local 32-byte seed, the funding key, the TLC base key, the MuSig2 base nonce and the
 * commitment seed; per-commitment secrets by a 48-bit bit-flip chain with CKB's blake2b.
 * Peers never reproduce the seed, so only the resulting public values matter for interop.
 */
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { hexToBytes } from '../codec/index.ts';
import { ckbHash, curve } from '../crypto/index.ts';

const te = new TextEncoder();
const N = secp256k1.Point.CURVE().n;

export interface ChannelKeys {
  fundingKey: Uint8Array;
  fundingPubkey: Uint8Array;
  tlcBaseKey: Uint8Array;
  tlcBasepoint: Uint8Array;
  musig2BaseNonce: Uint8Array;
  commitmentSeed: Uint8Array;
}

function checkScalar(k: Uint8Array, what: string): Uint8Array {
  const v = bytesToBig(k);
  if (v === 0n || v >= N) throw new Error(`${what} is not a valid secp256k1 scalar`);
  return k;
}

export function bytesToBig(b: Uint8Array): bigint {
  let v = 0n;
  for (const x of b) v = (v << 8n) | BigInt(x);
  return v;
}

export function bigTo32(v: bigint): Uint8Array {
  const out = new Uint8Array(32);
  let x = v;
  for (let i = 31; i >= 0; i--) {
    out[i] = Number(x & 0xffn);
    x >>= 8n;
  }
  return out;
}

export function pubOf(sk: Uint8Array): Uint8Array {
  return curve().mulG(sk);
}

const keyCache = new Map<string, ChannelKeys>();

/** `InMemorySigner::generate_from_seed` (memoised: two curve multiplications per call). */
export function deriveChannelKeys(seedParam: Uint8Array): ChannelKeys {
  const id = Buffer.from(seedParam).toString('hex');
  const hit = keyCache.get(id);
  if (hit) return { ...hit };
  const k = deriveUncached(seedParam);
  if (keyCache.size > 1024) keyCache.clear();
  keyCache.set(id, k);
  return { ...k };
}

function deriveUncached(seedParam: Uint8Array): ChannelKeys {
  const seed = ckbHash(seedParam);
  const commitmentSeed = ckbHash(seed, te.encode('commitment seed'));
  const fundingKey = checkScalar(ckbHash(te.encode('funding key'), seed), 'funding key');
  const tlcBaseKey = checkScalar(ckbHash(te.encode('HTLC base key'), fundingKey), 'tlc base key');
  // "nocne": the reference's spelling, part of the derivation.
  const musig2BaseNonce = ckbHash(te.encode('musig nocne'), tlcBaseKey);
  return {
    fundingKey,
    fundingPubkey: pubOf(fundingKey),
    tlcBaseKey,
    tlcBasepoint: pubOf(tlcBaseKey),
    musig2BaseNonce,
    commitmentSeed,
  };
}

/** Per-commitment secret n (48-bit chain: flip bit b of the running value, hash, for set bits). */
export function commitmentSecret(commitmentSeed: Uint8Array, n: bigint): Uint8Array {
  let s: Uint8Array = commitmentSeed.slice();
  for (let b = 47; b >= 0; b--) {
    if (((n >> BigInt(b)) & 1n) === 0n) continue;
    s[b >> 3] = (s[b >> 3] as number) ^ (1 << (b & 7));
    s = ckbHash(s);
  }
  return s;
}

/**
 * A small memo for curve results asked for again and again: a round's RevokeAndAck sends point R,
 * and every TLC created before the next round tweaks a key by that same point (about 1 ms each).
 */
function memo<T>(limit: number): (key: string, make: () => T) => T {
  const m = new Map<string, T>();
  return (key, make) => {
    const hit = m.get(key);
    if (hit !== undefined) return hit;
    const v = make();
    if (m.size >= limit) m.delete(m.keys().next().value as string);
    m.set(key, v);
    return v;
  };
}

const hexOf = (b: Uint8Array) => Buffer.from(b).toString('hex');
const pointMemo = memo<Uint8Array>(256);
const tweakMemo = memo<Uint8Array>(256);

export function commitmentPoint(commitmentSeed: Uint8Array, n: bigint): Uint8Array {
  return pointMemo(`${hexOf(commitmentSeed)}:${n}`, () => pubOf(commitmentSecret(commitmentSeed, n))).slice();
}

/** `priv + H(point)` mod n. */
export function tweakSecret(sk: Uint8Array, point: Uint8Array): Uint8Array {
  return bigTo32((bytesToBig(sk) + (bytesToBig(ckbHash(point)) % N)) % N);
}

/** `pub + H(point)·G`. */
export function tweakPubkey(pk: Uint8Array, point: Uint8Array): Uint8Array {
  return tweakMemo(`${hexOf(pk)}:${hexOf(point)}`, () => {
    const t = bytesToBig(ckbHash(point)) % N;
    if (t === 0n) return pk.slice();
    const sum = curve().add([pk, curve().mulG(bigTo32(t))]);
    if (!sum) throw new Error('tweaked key is the point at infinity');
    return sum;
  }).slice();
}

/** The temporary channel id the opener chooses: `H(tlc_basepoint ‖ 33 zero bytes)`. */
export function tempChannelId(tlcBasepoint: Uint8Array): Uint8Array {
  return ckbHash(tlcBasepoint, new Uint8Array(33));
}

/** The final channel id: `H(sorted tlc basepoints)`. */
export function finalChannelId(a: Uint8Array, b: Uint8Array): Uint8Array {
  return Buffer.compare(a, b) <= 0 ? ckbHash(a, b) : ckbHash(b, a);
}

/** A node-local channel seed: from the node secret, a counter and fresh randomness. */
export function newChannelSeed(nodeSecret: Uint8Array, count: number): Uint8Array {
  const random = secp256k1.utils.randomSecretKey();
  const be = new Uint8Array(8);
  new DataView(be.buffer).setBigUint64(0, BigInt(count));
  return ckbHash(
    te.encode('FIBER_CHANNEL_SEED'),
    be,
    ckbHash(te.encode('FIBER_NETWORK_ENTROPY'), nodeSecret, random),
  );
}

/** A channel's keys, from the seed it stores (memoised by `deriveChannelKeys`). */
export function keysOf(ch: { seed: string }): ChannelKeys {
  return deriveChannelKeys(hexToBytes(ch.seed));
}
