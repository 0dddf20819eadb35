/**
 * The pure cryptography of the secio handshake (tentacle-secio 0.6.7): algorithm negotiation,
 * ordering, ephemeral ECDH, the Exchange signature and key stretching. No I/O here, so each step
 * is checked directly against the captured vectors.
 */

import { x25519 } from '@noble/curves/ed25519.js';
import { p256 } from '@noble/curves/nist.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { hmac } from '@noble/hashes/hmac.js';
import { sha256, sha512 } from '@noble/hashes/sha2.js';
import { concat } from '../../codec/index.ts';
import { P2pError } from '../errors.ts';

export const EXCHANGES = ['X25519', 'P-256'] as const;
export const CIPHERS = ['CHACHA20_POLY1305', 'AES-128-GCM', 'AES-256-GCM'] as const;
export const HASHES = ['SHA256', 'SHA512'] as const;
export type ExchangeAlg = (typeof EXCHANGES)[number];
export type CipherAlg = (typeof CIPHERS)[number];
export type HashAlg = (typeof HASHES)[number];

/** What Strand proposes: the set that intersects both the native and the wasm reference. */
export const DEFAULT_PROPOSAL = {
  exchanges: 'X25519,P-256',
  ciphers: 'CHACHA20_POLY1305,AES-128-GCM,AES-256-GCM',
  hashes: 'SHA256,SHA512',
};

export const CIPHER_KEY_LEN: Record<CipherAlg, number> = {
  CHACHA20_POLY1305: 32,
  'AES-128-GCM': 16,
  'AES-256-GCM': 32,
};

function compare(a: Uint8Array, b: Uint8Array): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    if (a[i] !== b[i]) return a[i]! < b[i]! ? -1 : 1;
  }
  return a.length - b.length;
}

/**
 * Ordering: sign of SHA256(remote_pk ‖ local_nonce) − SHA256(local_pk ‖ remote_nonce).
 * Positive means our lists are preferred and our keys are the first half of the stretch.
 */
export function ordering(
  localPk: Uint8Array,
  localNonce: Uint8Array,
  remotePk: Uint8Array,
  remoteNonce: Uint8Array,
) {
  const oh1 = sha256(concat(remotePk, localNonce));
  const oh2 = sha256(concat(localPk, remoteNonce));
  return { oh1, oh2, ord: Math.sign(compare(oh1, oh2)) };
}

/** First entry of the preferred list that the other list also has and that we know. */
export function selectBest<T extends string>(
  ord: number,
  local: string,
  remote: string,
  known: readonly T[],
  what: string,
): T {
  const [preferred, other] = ord > 0 ? [local, remote] : [remote, local];
  const otherSet = new Set(other.split(','));
  for (const name of preferred.split(',')) {
    if (otherSet.has(name) && (known as readonly string[]).includes(name)) return name as T;
  }
  throw new P2pError(
    'NoSupportIntersection',
    `secio: no common ${what} (local "${local}", remote "${remote}")`,
  );
}

export interface EphemeralKey {
  alg: ExchangeAlg;
  secret: Uint8Array;
  publicKey: Uint8Array;
}

export function generateEphemeral(alg: ExchangeAlg, secret?: Uint8Array): EphemeralKey {
  if (alg === 'X25519') {
    const sk = secret ?? x25519.utils.randomSecretKey();
    return { alg, secret: sk, publicKey: x25519.getPublicKey(sk) };
  }
  const sk = secret ?? p256.utils.randomSecretKey();
  return { alg, secret: sk, publicKey: p256.getPublicKey(sk, false) };
}

/** ECDH with the remote ephemeral key; lengths are checked exactly, as OpenSSL does. */
export function sharedSecret(local: EphemeralKey, remoteEpub: Uint8Array): Uint8Array {
  try {
    if (local.alg === 'X25519') {
      if (remoteEpub.length !== 32) throw new Error(`X25519 key of ${remoteEpub.length} bytes`);
      const s = x25519.getSharedSecret(local.secret, remoteEpub);
      if (s.every((b) => b === 0)) throw new Error('all-zero shared secret');
      return s;
    }
    if (remoteEpub.length !== 65 || remoteEpub[0] !== 4)
      throw new Error('P-256 key must be 65-byte uncompressed');
    return p256.getSharedSecret(local.secret, remoteEpub, true).slice(1);
  } catch (e) {
    throw new P2pError('SecretGenerationFailed', `secio: ${(e as Error).message}`);
  }
}

/** The digest each side signs: SHA256(own Propose ‖ peer Propose ‖ own ephemeral key). */
export function exchangeDigest(
  ownPropose: Uint8Array,
  peerPropose: Uint8Array,
  ownEpub: Uint8Array,
): Uint8Array {
  return sha256(concat(ownPropose, peerPropose, ownEpub));
}

export function signExchange(digest: Uint8Array, secretKey: Uint8Array): Uint8Array {
  return secp256k1.sign(digest, secretKey, { prehash: false, format: 'der', lowS: true });
}

export function verifyExchange(signature: Uint8Array, digest: Uint8Array, remotePk: Uint8Array): void {
  let ok = false;
  try {
    ok = secp256k1.verify(signature, digest, remotePk, { prehash: false, format: 'der', lowS: true });
  } catch {
    ok = false;
  }
  if (!ok) throw new P2pError('SignatureVerificationFailed', 'secio: Exchange signature does not verify');
}

/** secio key stretching: HMAC(K, A ‖ "key expansion") blocks, A = HMAC(K, A). */
export function stretchKey(hash: HashAlg, key: Uint8Array, length: number): Uint8Array {
  const h = hash === 'SHA256' ? sha256 : sha512;
  const seed = new TextEncoder().encode('key expansion');
  const out = new Uint8Array(length);
  let a = hmac(h, key, seed);
  let at = 0;
  while (at < length) {
    const block = hmac(h, key, concat(a, seed));
    const take = Math.min(block.length, length - at);
    out.set(block.subarray(0, take), at);
    at += take;
    a = hmac(h, key, a);
  }
  return out;
}

export interface SessionKeys {
  /** Key for what we send. */
  local: Uint8Array;
  /** Key for what we receive. */
  remote: Uint8Array;
}

/** Splits the stretched secret into iv(12) ‖ key ‖ mac(20) halves; only the keys are used. */
export function splitKeys(cipher: CipherAlg, hash: HashAlg, shared: Uint8Array, ord: number): SessionKeys {
  if (ord === 0) throw new P2pError('InvalidProposition', 'secio: equal ordering digests');
  const keyLen = CIPHER_KEY_LEN[cipher];
  const half = 12 + keyLen + 20;
  const stretched = stretchKey(hash, shared, 2 * half);
  const first = stretched.slice(12, 12 + keyLen);
  const second = stretched.slice(half + 12, half + 12 + keyLen);
  return ord > 0 ? { local: first, remote: second } : { local: second, remote: first };
}
