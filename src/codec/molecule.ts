/**
 * The one molecule reader/writer: gossip messages (`gossip.mol`), onion payloads and error packets
 * (`fiber.mol`), channel messages and the transport structures (secio Propose/Exchange, tentacle
 * ProtocolInfo, FiberMessage Init). Strict the way the reference's generated readers are by
 * default: a table must have exactly the fields of its schema, offsets must be ordered and in
 * range, fixvec counts must match, structs must have their exact size. `readCompatibleTable` is
 * their "compatible" mode, for the tables a newer peer may extend. Every failure is a
 * `MoleculeError` — hostile bytes never raise anything else (the P2P layer turns it into its own
 * Malformed error, `p2p/errors.ts`).
 */
import { StrandError } from './errors.ts';

export class MoleculeError extends StrandError {}

export type Bytes = Uint8Array;

function fail(what: string, why: string): never {
  throw new MoleculeError(`${what}: ${why}`);
}

export function u32le(n: number): Bytes {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, n >>> 0, true);
  return b;
}

export function readU32le(buf: Bytes, at: number): number {
  return (buf[at]! | (buf[at + 1]! << 8) | (buf[at + 2]! << 16) | (buf[at + 3]! << 24)) >>> 0;
}

/** Unsigned little-endian integer of `size` bytes. */
export function uintLe(value: bigint, size: number): Bytes {
  if (value < 0n || value >= 1n << BigInt(8 * size))
    throw new RangeError(`value ${value} exceeds ${size} bytes`);
  const out = new Uint8Array(size);
  let v = value;
  for (let i = 0; i < size; i++) {
    out[i] = Number(v & 0xffn);
    v >>= 8n;
  }
  return out;
}

export function readUintLe(buf: Bytes, size: number, what: string): bigint {
  if (buf.length !== size) fail(what, `expected ${size} bytes, got ${buf.length}`);
  let v = 0n;
  for (let i = size - 1; i >= 0; i--) v = (v << 8n) | BigInt(buf[i]!);
  return v;
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

/** `vector X <byte>` (and fixvecs of fixed-size items): count ‖ items. */
export function fixvec(bytes: Bytes, itemSize = 1): Bytes {
  return concat(u32le(bytes.length / itemSize), bytes);
}

export function readFixvec(buf: Bytes, what: string, itemSize = 1): Bytes {
  if (buf.length < 4) fail(what, 'fixvec shorter than its header');
  const count = readU32le(buf, 0);
  if (count * itemSize !== buf.length - 4) fail(what, `fixvec count ${count} disagrees with its size`);
  return buf.subarray(4);
}

/** A table, or a dynvec (same layout, items for fields). */
export function table(fields: Bytes[]): Bytes {
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

/** Reads a dynvec or table; `fields` = exact field count for a table, undefined for a dynvec. */
export function readTable(buf: Bytes, what: string, fields?: number): Bytes[] {
  return readFields(buf, what, (count) => {
    if (fields !== undefined && count !== fields) fail(what, `expected ${fields} fields, got ${count}`);
  });
}

/**
 * Reads a table in molecule's "compatible" mode (as tentacle and the reference read their
 * transport and channel messages): at least `fields` fields; more, from a newer schema, are
 * allowed (returned after the known ones, for the caller to ignore).
 */
export function readCompatibleTable(buf: Bytes, what: string, fields: number): Bytes[] {
  return readFields(buf, what, (count) => {
    if (count < fields) fail(what, `expected ${fields} fields, got ${count}`);
  });
}

/** A table's or dynvec's items, once `checkCount` accepts how many there are. */
function readFields(buf: Bytes, what: string, checkCount: (count: number) => void): Bytes[] {
  if (buf.length < 4) fail(what, 'shorter than its size header');
  const total = readU32le(buf, 0);
  if (total !== buf.length) fail(what, `size ${total} disagrees with ${buf.length} bytes`);
  if (total === 4) {
    checkCount(0);
    return [];
  }
  if (total < 8) fail(what, 'truncated header');
  const first = readU32le(buf, 4);
  if (first % 4 !== 0 || first < 8 || first > total) fail(what, `bad first offset ${first}`);
  const count = first / 4 - 1;
  checkCount(count);
  const out: Bytes[] = [];
  let start = first;
  for (let i = 0; i < count; i++) {
    const end = i + 1 < count ? readU32le(buf, 4 * (i + 2)) : total;
    if (end < start || end > total) fail(what, 'field offsets out of order');
    out.push(buf.subarray(start, end));
    start = end;
  }
  return out;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });
const utf8Encoder = new TextEncoder();

/** A string as molecule carries it: a fixvec of its UTF-8 bytes. */
export function utf8String(s: string): Bytes {
  return fixvec(utf8Encoder.encode(s));
}

export function readUtf8String(buf: Bytes, what: string): string {
  const raw = readFixvec(buf, what);
  try {
    return utf8.decode(raw);
  } catch {
    fail(what, 'not valid UTF-8');
  }
}

export function option(inner: Bytes | null | undefined): Bytes {
  return inner ?? new Uint8Array(0);
}

export function readOption(buf: Bytes): Bytes | null {
  return buf.length === 0 ? null : buf;
}

export function union(id: number, body: Bytes): Bytes {
  return concat(u32le(id), body);
}

export function readUnion(buf: Bytes, what: string, items: number): { id: number; body: Bytes } {
  if (buf.length < 4) fail(what, 'union shorter than its id');
  const id = readU32le(buf, 0);
  if (id >= items) fail(what, `unknown union item ${id}`);
  return { id, body: buf.subarray(4) };
}

export function fixed(buf: Bytes, size: number, what: string): Bytes {
  if (buf.length !== size) fail(what, `expected ${size} bytes, got ${buf.length}`);
  return buf;
}

export function byte(buf: Bytes, what: string): number {
  return fixed(buf, 1, what)[0]!;
}

/** Splits a struct into its fixed-size fields. */
export function readStruct(buf: Bytes, sizes: number[], what: string): Bytes[] {
  const total = sizes.reduce((a, b) => a + b, 0);
  if (buf.length !== total) fail(what, `expected ${total} bytes, got ${buf.length}`);
  const out: Bytes[] = [];
  let at = 0;
  for (const s of sizes) {
    out.push(buf.subarray(at, at + s));
    at += s;
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
