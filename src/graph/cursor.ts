/**
 * Gossip cursors (`docs/reference/fiber-routing-protocol.md` §3.3): 45 bytes,
 * `timestamp u64 BE ‖ type ‖ id(36)`, type 0 ChannelAnnouncement (id = outpoint),
 * 1 ChannelUpdate (outpoint), 2 NodeAnnouncement (pubkey ‖ 000000). Plain byte order sorts them.
 */
import { secp256k1 } from '@noble/curves/secp256k1.js';
import type { Bytes } from '../codec/index.ts';
import { StrandError } from '../codec/index.ts';

export const CURSOR_SIZE = 45;
export const CURSOR_TYPE = { ChannelAnnouncement: 0, ChannelUpdate: 1, NodeAnnouncement: 2 } as const;
export type CursorType = (typeof CURSOR_TYPE)[keyof typeof CURSOR_TYPE];

export class CursorError extends StrandError {}

export function makeCursor(timestamp: bigint, type: CursorType, id: Bytes): Bytes {
  const out = new Uint8Array(CURSOR_SIZE);
  new DataView(out.buffer).setBigUint64(0, timestamp, false);
  out[8] = type;
  out.set(id.subarray(0, 36), 9);
  return out;
}

/** The cursor before everything (the reference's `Cursor::default()`). */
export const ZERO_CURSOR = new Uint8Array(CURSOR_SIZE);

export function cursorTimestamp(c: Bytes): bigint {
  return new DataView(c.buffer, c.byteOffset, c.byteLength).getBigUint64(0, false);
}

/** Validates a cursor as the reference's `Cursor::from_bytes` does (its error texts). */
export function parseCursor(bytes: Bytes): Bytes {
  if (bytes.length !== CURSOR_SIZE)
    throw new CursorError(`Invalid cursor size: ${bytes.length}, want ${CURSOR_SIZE}`);
  const type = bytes[8]!;
  if (type > 2) throw new CursorError(`Invalid message id type: ${type}`);
  if (type === 2) {
    try {
      secp256k1.Point.fromBytes(bytes.subarray(9, 42));
    } catch {
      throw new CursorError('malformed public key');
    }
  }
  return bytes;
}

/** A cursor with the timestamp moved back by `ms` (zero cursor if that goes below 0). */
export function goBack(c: Bytes, ms: bigint): Bytes {
  const t = cursorTimestamp(c);
  if (t <= ms) return ZERO_CURSOR;
  const out = c.slice();
  new DataView(out.buffer).setBigUint64(0, t - ms, false);
  return out;
}
