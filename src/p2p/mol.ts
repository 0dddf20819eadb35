/**
 * A strict molecule reader/writer for the few transport structures (secio Propose/Exchange,
 * tentacle ProtocolInfo, FiberMessage Init). Strict in the way tentacle's generated readers are
 * in "compatible" mode: a table may carry more fields than we know (ignored), but sizes, offsets
 * and fixvec counts must be consistent. Every number is a u32 little-endian.
 */
import { malformed } from './errors.ts';

export function u32le(n: number): Uint8Array {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, n >>> 0, true);
  return b;
}

function readU32(buf: Uint8Array, at: number): number {
  return new DataView(buf.buffer, buf.byteOffset, buf.byteLength).getUint32(at, true);
}

export function concatBytes(...parts: Uint8Array[]): Uint8Array {
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

/** `vector X <byte>`: count ‖ bytes. */
export function encodeFixvec(bytes: Uint8Array): Uint8Array {
  return concatBytes(u32le(bytes.length), bytes);
}

export function decodeFixvec(buf: Uint8Array, what: string): Uint8Array {
  if (buf.length < 4) throw malformed(`${what}: fixvec shorter than its header`);
  const count = readU32(buf, 0);
  if (count !== buf.length - 4)
    throw malformed(`${what}: fixvec count ${count} disagrees with size ${buf.length - 4}`);
  return buf.subarray(4);
}

/** A table (or a dynvec: the same layout with items for fields). */
export function encodeTable(fields: Uint8Array[]): Uint8Array {
  const header = 4 * (fields.length + 1);
  let total = header;
  for (const f of fields) total += f.length;
  const out = new Uint8Array(total);
  const view = new DataView(out.buffer);
  view.setUint32(0, total, true);
  let at = header;
  for (const [i, f] of fields.entries()) {
    view.setUint32(4 * (i + 1), at, true);
    out.set(f, at);
    at += f.length;
  }
  return out;
}

/**
 * Reads a table's fields. At least `minFields` must be present; extra fields are allowed only
 * when `compatible` (then ignored by the caller). For a dynvec pass `minFields = 0`.
 */
export function decodeTable(
  buf: Uint8Array,
  minFields: number,
  what: string,
  compatible = true,
): Uint8Array[] {
  if (buf.length < 4) throw malformed(`${what}: shorter than its size header`);
  const total = readU32(buf, 0);
  if (total !== buf.length) throw malformed(`${what}: size ${total} disagrees with ${buf.length} bytes`);
  if (total === 4) {
    if (minFields > 0) throw malformed(`${what}: expected ${minFields} fields, got 0`);
    return [];
  }
  if (total < 8) throw malformed(`${what}: truncated header`);
  const first = readU32(buf, 4);
  if (first % 4 !== 0 || first < 8 || first > total) throw malformed(`${what}: bad first offset ${first}`);
  const count = first / 4 - 1;
  if (count < minFields) throw malformed(`${what}: expected ${minFields} fields, got ${count}`);
  if (!compatible && count > minFields)
    throw malformed(`${what}: expected ${minFields} fields, got ${count}`);
  const offsets: number[] = [];
  for (let i = 0; i < count; i++) offsets.push(readU32(buf, 4 * (i + 1)));
  offsets.push(total);
  const fields: Uint8Array[] = [];
  for (let i = 0; i < count; i++) {
    const start = offsets[i]!;
    const end = offsets[i + 1]!;
    if (start > end || end > total) throw malformed(`${what}: field offsets out of order`);
    fields.push(buf.subarray(start, end));
  }
  return fields;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });
const utf8enc = new TextEncoder();

export function encodeString(s: string): Uint8Array {
  return encodeFixvec(utf8enc.encode(s));
}

export function decodeString(buf: Uint8Array, what: string): string {
  const raw = decodeFixvec(buf, what);
  try {
    return utf8.decode(raw);
  } catch {
    throw malformed(`${what}: not valid UTF-8`);
  }
}

/** A fixed-size molecule array (`array Byte32 [byte; 32]`). */
export function decodeFixed(buf: Uint8Array, size: number, what: string): Uint8Array {
  if (buf.length !== size) throw malformed(`${what}: expected ${size} bytes, got ${buf.length}`);
  return buf;
}

export { readU32 as readU32le };
