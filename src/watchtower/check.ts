/** Checks of the keys, signatures and molecule blobs a watchtower is fed (hostile input). */
import { ccc } from '@ckb-ccc/core';
import { schnorr, secp256k1 } from '@noble/curves/secp256k1.js';
import { WatchtowerError } from './errors.ts';

const N = secp256k1.Point.CURVE().n;
const P = secp256k1.Point.CURVE().p;

const hexBytes = (h: string) => Buffer.from(h.startsWith('0x') ? h.slice(2) : h, 'hex');

/** An error text for a pubkey that is not a point of the curve, or null. */
export function checkPubkey(hex: string): string | null {
  const raw = hex.startsWith('0x') ? hex.slice(2) : hex;
  try {
    secp256k1.Point.fromHex(raw);
    return null;
  } catch {
    return `invalid pubkey '${raw}': malformed public key`;
  }
}

export function checkSecretKey(hex: string): void {
  const v = BigInt(`0x${hexBytes(hex).toString('hex') || '0'}`);
  if (v === 0n || v >= N)
    throw new WatchtowerError('InvalidSecretKey', 'invalid secret key: not a secp256k1 scalar');
}

/** A 64-byte BIP-340 signature `R.x ‖ s`: an error text, or null. */
export function checkSignature(hex: string): string | null {
  const b = hexBytes(hex);
  if (b.length !== 64) return `expected 64 bytes, got ${b.length}`;
  const r = BigInt(`0x${b.subarray(0, 32).toString('hex')}`);
  const s = BigInt(`0x${b.subarray(32).toString('hex')}`);
  if (r >= P || s >= N) return 'malformed signature';
  try {
    schnorr.utils.lift_x(r);
  } catch {
    return 'malformed signature';
  }
  return null;
}

export function checkCellOutput(hex: string): ccc.CellOutput | null {
  try {
    const out = ccc.CellOutput.fromBytes(hex);
    // A strict parse: re-encoding must give the same bytes (no trailing garbage).
    return ccc.hexFrom(out.toBytes()) === hex.toLowerCase() ? out : null;
  } catch {
    return null;
  }
}

/** Molecule `Bytes` (le32 length ‖ data) → the raw data as 0x hex, or null when malformed. */
export function moleculeBytes(hex: string): string | null {
  const b = hexBytes(hex);
  if (b.length < 4) return null;
  const n = b.readUInt32LE(0);
  if (n !== b.length - 4) return null;
  return `0x${b.subarray(4).toString('hex')}`;
}
