/** The hashes of CKB and Fiber. */
import { blake2b } from '@noble/hashes/blake2.js';
import { sha256 as nobleSha256 } from '@noble/hashes/sha2.js';

const CKB_PERSONAL = new TextEncoder().encode('ckb-default-hash');

/** CKB's hash: BLAKE2b-256 with personalisation `ckb-default-hash`. */
export function ckbHash(...parts: Uint8Array[]): Uint8Array {
  const h = blake2b.create({ dkLen: 32, personalization: CKB_PERSONAL });
  for (const p of parts) h.update(p);
  return h.digest();
}

/** First 20 bytes of the CKB hash (lock args of secp256k1-blake160). */
export function blake160(data: Uint8Array): Uint8Array {
  return ckbHash(data).slice(0, 20);
}

export function sha256(...parts: Uint8Array[]): Uint8Array {
  const h = nobleSha256.create();
  for (const p of parts) h.update(p);
  return h.digest();
}
