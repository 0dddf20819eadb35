/**
 * secp256k1 helpers in CKB's conventions: recoverable ECDSA signatures are 65 bytes
 * `r ‖ s ‖ recovery id` over a 32-byte message that is already a hash (no pre-hashing),
 * deterministic nonces (RFC 6979). The lock args of secp256k1-blake160 are
 * `blake160(compressed public key)`.
 */
import { schnorr, secp256k1 } from '@noble/curves/secp256k1.js';
import { blake160 } from './hash.ts';

export function compressedPubkey(secretKey: Uint8Array): Uint8Array {
  return secp256k1.getPublicKey(secretKey, true);
}

/** The secp256k1-blake160 lock args of a secret key. */
export function lockArgsOf(secretKey: Uint8Array): Uint8Array {
  return blake160(compressedPubkey(secretKey));
}

/** Signs a 32-byte hash; returns `r ‖ s ‖ recid` (65 bytes), as CKB's sighash locks expect. */
export function signRecoverable(message32: Uint8Array, secretKey: Uint8Array): Uint8Array {
  // noble's 'recovered' format is recid ‖ r ‖ s; CKB puts the recovery id last.
  const sig = secp256k1.sign(message32, secretKey, { prehash: false, format: 'recovered' });
  const out = new Uint8Array(65);
  out.set(sig.subarray(1, 65), 0);
  out[64] = sig[0] as number;
  return out;
}

/**
 * Recovers the compressed public key from a CKB 65-byte signature; null when the signature is
 * malformed (bad length, recovery id above 3, r or s out of range, no point).
 */
export function recoverCompressed(message32: Uint8Array, sig65: Uint8Array): Uint8Array | null {
  if (sig65.length !== 65 || message32.length !== 32) return null;
  const recid = sig65[64] as number;
  if (recid > 3) return null;
  const noble = new Uint8Array(65);
  noble[0] = recid;
  noble.set(sig65.subarray(0, 64), 1);
  try {
    return secp256k1.recoverPublicKey(noble, message32, { prehash: false });
  } catch {
    return null;
  }
}

/** BIP340 verification against a 32-byte x-only key; false for any malformed part. */
export function verifySchnorr(sig64: Uint8Array, message32: Uint8Array, xonly32: Uint8Array): boolean {
  if (sig64.length !== 64 || xonly32.length !== 32) return false;
  try {
    return schnorr.verify(sig64, message32, xonly32);
  } catch {
    return false;
  }
}
