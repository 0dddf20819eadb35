/**
 * The Sphinx construction of fiber-sphinx (BOLT 4 Sphinx), independent of Fiber's payload format:
 * key schedule, packet creation, peeling, and error packets
 * (`docs/reference/fiber-routing-protocol.md` §1.1–§1.3, §1.6).
 *
 * A packet is `version(1) ‖ α(33) ‖ β(L) ‖ γ(32)`. The caller chooses L and how a hop's payload
 * length is read from the decrypted routing info (`HopLength`). Hand-written because no maintained
 * JavaScript library implements fiber-sphinx's variant (raw hop data, caller-defined lengths).
 * ChaCha20 and HMAC-SHA256 run in OpenSSL (node:crypto): over a 6,500-byte routing info they are
 * 4–7× faster than in JavaScript, and a payment does several of each per hop.
 */
import { createCipheriv, createHmac } from 'node:crypto';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { concat, StrandError } from '../../codec/index.ts';
import { curve } from '../../crypto/index.ts';

export type Bytes = Uint8Array;

/** Why a packet could not be created or peeled (all map to InvalidOnionPayload in Fiber). */
export type SphinxErrorKind =
  | 'PacketTooShort'
  | 'InvalidPublicKey'
  | 'InvalidHmac'
  | 'InvalidHopLength'
  | 'HopDataLenTooLarge'
  | 'InvalidSessionKey';

export class SphinxError extends StrandError {
  constructor(
    readonly kind: SphinxErrorKind,
    message: string,
  ) {
    super(message);
  }
}

/** Reads the length of the first hop's data from decrypted routing info; null if unreadable. */
export type HopLength = (routingInfo: Bytes) => number | null;

const N = secp256k1.Point.Fn.ORDER;
/** OpenSSL's ChaCha20 IV: the 32-bit block counter (little-endian) then the 96-bit nonce, all zero. */
const ZERO_IV = new Uint8Array(16);
const enc = new TextEncoder();
const LABEL = {
  rho: enc.encode('rho'),
  mu: enc.encode('mu'),
  um: enc.encode('um'),
  ammag: enc.encode('ammag'),
  pad: enc.encode('pad'),
};

function toScalar(b: Bytes): bigint {
  let v = 0n;
  for (const x of b) v = (v << 8n) | BigInt(x);
  return v;
}

const view = (b: Buffer): Bytes => new Uint8Array(b.buffer, b.byteOffset, b.length);

/** `data` XOR the ChaCha20 keystream of `key` (zero nonce, counter 0), in a new array. */
function chacha(key: Bytes, data: Bytes): Bytes {
  return view(createCipheriv('chacha20', key, ZERO_IV).update(data));
}

/** ChaCha20 keystream of `len` bytes (zero nonce, counter 0). */
export function keystream(key: Bytes, len: number): Bytes {
  return chacha(key, new Uint8Array(len));
}

/**
 * Bytes [from, from + len) of the keystream, made from the 64-byte block that holds `from` on
 * (OpenSSL's IV starts with the block counter), not from the start of the stream.
 */
function keystreamAt(key: Bytes, from: number, len: number): Bytes {
  const iv = new Uint8Array(16);
  new DataView(iv.buffer).setUint32(0, Math.floor(from / 64), true);
  const skip = from % 64;
  return view(createCipheriv('chacha20', key, iv).update(new Uint8Array(skip + len))).subarray(skip);
}

function xorInto(target: Bytes, stream: Bytes): void {
  for (let i = 0; i < target.length; i++) target[i]! ^= stream[i]!;
}

function hmacSha256(key: Bytes, ...parts: Bytes[]): Bytes {
  const h = createHmac('sha256', key);
  for (const p of parts) h.update(p);
  return view(h.digest());
}

export function deriveKey(label: keyof typeof LABEL, secret: Bytes): Bytes {
  return hmacSha256(LABEL[label], secret);
}

/** k·P for a compressed point from a packet or a route; k in [1, n). */
function mulPoint(p: Bytes, k: bigint): Bytes {
  try {
    return curve().mul(p, secp256k1.Point.Fn.toBytes(k));
  } catch {
    throw new SphinxError('InvalidPublicKey', 'invalid public key in onion packet');
  }
}

/** libsecp256k1's default ECDH: SHA256(compressed(k·P)). */
function ecdh(p: Bytes, k: bigint): Bytes {
  return sha256(mulPoint(p, k));
}

/** The first layer's points when made ahead: e·G and e·P for the first hop P (compressed). */
export interface FirstLayerPoints {
  alpha: Bytes;
  point: Bytes;
}

function blinding(alpha: Bytes, secret: Bytes): bigint {
  const b = toScalar(sha256(concat(alpha, secret)));
  if (b === 0n || b >= N) throw new SphinxError('InvalidPublicKey', 'blinding factor out of range');
  return b;
}

export interface HopKeys {
  /** α_i, the ephemeral public key hop i sees. */
  ephemeralPublicKey: Bytes;
  sharedSecret: Bytes;
  rho: Bytes;
  mu: Bytes;
}

/**
 * The per-hop keys for a session key and the hops' public keys (§1.1). `first`: the first hop's
 * e·G and e·P, made ahead for this session key (the same values, not computed again).
 */
export function deriveHopsKeys(sessionKey: Bytes, hopPubkeys: Bytes[], first?: FirstLayerPoints): HopKeys[] {
  let e = toScalar(sessionKey);
  if (e === 0n || e >= N) throw new SphinxError('InvalidSessionKey', 'session key out of range');
  let alpha = first?.alpha ?? curve().mulG(secp256k1.Point.Fn.toBytes(e));
  const out: HopKeys[] = [];
  for (const [i, pk] of hopPubkeys.entries()) {
    const secret = i === 0 && first ? sha256(first.point) : ecdh(pk, e);
    out.push({
      ephemeralPublicKey: alpha,
      sharedSecret: secret,
      rho: deriveKey('rho', secret),
      mu: deriveKey('mu', secret),
    });
    // The last hop has no next key to blind (a point multiplication saved).
    if (i === hopPubkeys.length - 1) break;
    const b = blinding(alpha, secret);
    e = (e * b) % N;
    alpha = mulPoint(alpha, b);
  }
  return out;
}

/**
 * The filler the last hop's routing info ends with (§1.2 step 2): each hop before the last
 * shifts it by its data and XORs it with the end of its keystream, bytes [L − |filler|, L + its
 * data + 32), the only part of the stream made here.
 */
export function generateFiller(keys: HopKeys[], hopData: Bytes[], dataLen: number): Bytes {
  let filler = new Uint8Array(0);
  for (let i = 0; i < keys.length - 1; i++) {
    const add = hopData[i]!.length + 32;
    const grown = new Uint8Array(filler.length + add);
    grown.set(filler, 0);
    xorInto(grown, keystreamAt(keys[i]!.rho, dataLen - filler.length, grown.length));
    filler = grown;
  }
  return filler;
}

export interface CreateOptions {
  sessionKey: Bytes;
  hopPubkeys: Bytes[];
  /** Raw data for each hop, already in the form the hop's `HopLength` reads. */
  hopData: Bytes[];
  assocData?: Bytes;
  /** L, the routing info size (6500 for payments, 1300 for trampoline). */
  dataLen: number;
  version?: number;
  /** The first hop's points, made ahead for `sessionKey` (`deriveHopsKeys`). */
  firstLayer?: FirstLayerPoints;
}

/**
 * Builds a packet (§1.2) and returns with it the hops' shared secrets, which the sender keeps to
 * read error packets: the hop keys are derived once for both.
 */
export function sealPacket(o: CreateOptions): { packet: Bytes; sharedSecrets: Bytes[] } {
  const L = o.dataLen;
  if (o.hopPubkeys.length === 0 || o.hopPubkeys.length !== o.hopData.length) {
    throw new SphinxError(
      'HopDataLenTooLarge',
      'hop data and hop keys must be non-empty and of the same count',
    );
  }
  const total = o.hopData.reduce((s, m) => s + m.length + 32, 0);
  if (total > L) throw new SphinxError('HopDataLenTooLarge', `hop data needs ${total} bytes, more than ${L}`);
  const keys = deriveHopsKeys(o.sessionKey, o.hopPubkeys, o.firstLayer);
  const filler = generateFiller(keys, o.hopData, L);
  const A = o.assocData ?? new Uint8Array(0);
  let P = keystream(deriveKey('pad', o.sessionKey), L);
  let h: Bytes = new Uint8Array(32);
  for (let i = keys.length - 1; i >= 0; i--) {
    // The layer is the plain layer XOR hop i's keystream: OpenSSL XORs as it encrypts.
    const m = o.hopData[i]!;
    const plain = new Uint8Array(L);
    plain.set(m, 0);
    plain.set(h, m.length);
    plain.set(P.subarray(0, L - m.length - 32), m.length + 32);
    const next = chacha(keys[i]!.rho, plain);
    if (i === keys.length - 1) next.set(filler, L - filler.length);
    P = next;
    h = hmacSha256(keys[i]!.mu, P, A);
  }
  const out = new Uint8Array(1 + 33 + L + 32);
  out[0] = o.version ?? 0;
  out.set(keys[0]!.ephemeralPublicKey, 1);
  out.set(P, 34);
  out.set(h, 34 + L);
  return { packet: out, sharedSecrets: keys.map((k) => k.sharedSecret) };
}

export interface Peeled {
  /** This hop's data, `hopLength` bytes. */
  hopData: Bytes;
  /** The packet for the next hop (same version byte), or null at the last hop (γ' all zero). */
  next: Bytes | null;
  sharedSecret: Bytes;
}

/**
 * Peels one layer with the hop's secret key (§1.3). `ecdhPoint`: k·α for this packet's α and
 * `secretKey`, made elsewhere (`ecdh-ahead.ts`); the shared secret is then its hash.
 */
export function peelPacket(
  packet: Bytes,
  secretKey: Bytes,
  assocData: Bytes | undefined,
  hopLength: HopLength,
  ecdhPoint?: Bytes,
): Peeled {
  if (packet.length < 66) throw new SphinxError('PacketTooShort', `onion packet of ${packet.length} bytes`);
  const alpha = packet.subarray(1, 34);
  const beta = packet.subarray(34, packet.length - 32);
  const gamma = packet.subarray(packet.length - 32);
  const L = beta.length;
  const sk = toScalar(secretKey);
  if (sk === 0n || sk >= N) throw new SphinxError('InvalidSessionKey', 'secret key out of range');
  const secret = ecdhPoint ? sha256(ecdhPoint) : ecdh(alpha, sk);
  const mu = deriveKey('mu', secret);
  const expected = hmacSha256(mu, beta, assocData ?? new Uint8Array(0));
  if (!constantTimeEqual(expected, gamma)) throw new SphinxError('InvalidHmac', 'onion packet HMAC mismatch');
  const D0 = new Uint8Array(2 * L);
  D0.set(beta, 0);
  const D = chacha(deriveKey('rho', secret), D0);
  const n = hopLength(D);
  if (n === null || !Number.isInteger(n) || n < 0 || n + 32 > L) {
    throw new SphinxError('InvalidHopLength', 'onion hop data length out of range');
  }
  const hopData = D.slice(0, n);
  const nextHmac = D.subarray(n, n + 32);
  if (nextHmac.every((x) => x === 0)) return { hopData, next: null, sharedSecret: secret };
  const nextAlpha = mulPoint(alpha, blinding(alpha, secret));
  const next = new Uint8Array(packet.length);
  next[0] = packet[0]!;
  next.set(nextAlpha, 1);
  next.set(D.subarray(n + 32, n + 32 + L), 34);
  next.set(nextHmac, 34 + L);
  return { hopData, next, sharedSecret: secret };
}

// ---- error packets (§1.6) ----

/** The erring hop builds `(HMAC(um, payload) ‖ payload) ⊕ S(ammag)`. */
export function createErrorPacket(sharedSecret: Bytes, payload: Bytes): Bytes {
  return chacha(
    deriveKey('ammag', sharedSecret),
    concat(hmacSha256(deriveKey('um', sharedSecret), payload), payload),
  );
}

/**
 * Each upstream hop obfuscates the packet once more with its own shared secret. Always a fresh
 * array, never the input changed in place: a Node Buffer passes for a Uint8Array, but its
 * `slice()` is a view, and XOR-ing a view in place once garbled errors decoded from it (their
 * node id and channel) on the sender's later passes.
 */
export function obfuscateErrorPacket(sharedSecret: Bytes, packet: Bytes): Bytes {
  return chacha(deriveKey('ammag', sharedSecret), packet);
}

/**
 * The sender strips one layer per hop until an HMAC verifies and `accept` takes the payload;
 * returns the erring hop's index and its payload, or null when no hop matches.
 */
export function parseErrorPacket<T>(
  sharedSecrets: Bytes[],
  packet: Bytes,
  accept: (payload: Bytes) => T | null,
): { index: number; payload: Bytes; value: T } | null {
  if (packet.length < 32) return null;
  let e: Bytes = Uint8Array.from(packet);
  for (const [i, s] of sharedSecrets.entries()) {
    e = obfuscateErrorPacket(s, e);
    const payload = e.subarray(32);
    if (constantTimeEqual(hmacSha256(deriveKey('um', s), payload), e.subarray(0, 32))) {
      const value = accept(payload);
      if (value !== null) return { index: i, payload: payload.slice(), value };
    }
  }
  return null;
}

function constantTimeEqual(a: Bytes, b: Bytes): boolean {
  if (a.length !== b.length) return false;
  let d = 0;
  for (let i = 0; i < a.length; i++) d |= a[i]! ^ b[i]!;
  return d === 0;
}
