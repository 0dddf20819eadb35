/**
 * Node identity: a secp256k1 key. The public key is shown compressed (33 bytes, hex without
 * `0x`); the peer id is base58btc of the sha2-256 multihash of the compressed key (`Qm…`),
 * as tentacle computes it.
 */
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { base58 } from '@scure/base';
import { bytesToHex } from '../codec/index.ts';
import { sha256 } from './hash.ts';

export function publicKeyOf(secretKey: Uint8Array): Uint8Array {
  return secp256k1.getPublicKey(secretKey, true);
}

export function peerIdOf(compressedPubkey: Uint8Array): string {
  const mh = new Uint8Array(34);
  mh[0] = 0x12; // sha2-256
  mh[1] = 0x20; // 32 bytes
  mh.set(sha256(compressedPubkey), 2);
  return base58.encode(mh);
}

/** Decodes a `Qm…` peer id to the sha256 of the key it names; throws on a malformed id. */
export function peerIdDigest(peerId: string): Uint8Array {
  const mh = base58.decode(peerId);
  if (mh.length !== 34 || mh[0] !== 0x12 || mh[1] !== 0x20) throw new Error(`malformed peer id '${peerId}'`);
  return mh.slice(2);
}

export function isValidSecretKey(sk: Uint8Array): boolean {
  return sk.length === 32 && secp256k1.utils.isValidSecretKey(sk);
}

export interface NodeIdentity {
  secretKey: Uint8Array;
  publicKey: Uint8Array;
  /** 66 hex chars, no `0x`. */
  pubkeyHex: string;
  peerId: string;
}

export function identityFromSecret(secretKey: Uint8Array): NodeIdentity {
  const publicKey = publicKeyOf(secretKey);
  return { secretKey, publicKey, pubkeyHex: bytesToHex(publicKey, false), peerId: peerIdOf(publicKey) };
}
