/**
 * Molecule's error and the byte helpers below the schemas of `schema.ts` (which declare every
 * wire message: gossip, onion payloads, channel messages, transport structures, the invoice).
 * Every decoding failure is a `MoleculeError` — hostile bytes never raise anything else (the P2P
 * layer turns it into its own Malformed error, `p2p/errors.ts`).
 */
import { StrandError } from './errors.ts';

export class MoleculeError extends StrandError {}

export type Bytes = Uint8Array;

export function u32le(n: number): Bytes {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, n >>> 0, true);
  return b;
}

export function readU32le(buf: Bytes, at: number): number {
  return (buf[at]! | (buf[at + 1]! << 8) | (buf[at + 2]! << 16) | (buf[at + 3]! << 24)) >>> 0;
}

export function concat(...parts: Bytes[]): Bytes {
  let len = 0;
  for (const p of parts) len += p.length;
  const out = new Uint8Array(len);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

export function equalBytes(a: Bytes, b: Bytes): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export function compareBytes(a: Bytes, b: Bytes): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}

/** Molecule byte of a CKB script's hash type: `data` 0, `type` 1, `data1` 2, `data2` 4. */
export const HASH_TYPE_BYTE: Readonly<Record<string, number>> = { data: 0, type: 1, data1: 2, data2: 4 };
