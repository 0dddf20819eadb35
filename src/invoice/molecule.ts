/**
 * Molecule `RawInvoiceData` (Fiber `invoice.mol`), encoded and decoded with the same strict
 * verification as the Rust generated code (`from_slice`, non-compatible mode: exact field counts,
 * exact struct sizes, ordered offsets, known union ids). Hand-written rather than built from a
 * generic molecule library so that every malformed input yields a typed error with molecule's
 * own wording, and the attribute conversions that panic in the reference (invalid UTF-8, invalid
 * public key) become typed errors here.
 */
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { InvoiceError, moleculeError } from './errors.ts';
import { ATTR_KINDS, type HashAlgorithm, type InvoiceAttr, type InvoiceData } from './types.ts';

// ---------------------------------------------------------------- writing

function u32le(n: number): Uint8Array {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, n, true);
  return b;
}

function uintLe(v: bigint, bytes: number): Uint8Array {
  const out = new Uint8Array(bytes);
  let x = v;
  for (let i = 0; i < bytes; i++) {
    out[i] = Number(x & 0xffn);
    x >>= 8n;
  }
  if (x !== 0n) throw new RangeError(`value ${v} does not fit in ${bytes} bytes`);
  return out;
}

function concat(parts: Uint8Array[]): Uint8Array {
  let len = 0;
  for (const p of parts) len += p.length;
  const out = new Uint8Array(len);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

function fixBytes(data: Uint8Array): Uint8Array {
  return concat([u32le(data.length), data]);
}

/** Table and dynvec share one layout: total size, offsets, items. */
function table(fields: Uint8Array[]): Uint8Array {
  const header = 4 + 4 * fields.length;
  let offset = header;
  const offsets: Uint8Array[] = [];
  for (const f of fields) {
    offsets.push(u32le(offset));
    offset += f.length;
  }
  return concat([u32le(offset), ...offsets, ...fields]);
}

const utf8 = new TextEncoder();

function encodeAttr(attr: InvoiceAttr): Uint8Array {
  const id = ATTR_KINDS.indexOf(attr.kind);
  let body: Uint8Array;
  switch (attr.kind) {
    case 'ExpiryTime':
      body =
        attr.legacyNanos === undefined
          ? uintLe(attr.seconds, 8)
          : concat([uintLe(attr.seconds, 8), uintLe(attr.legacyNanos, 8)]);
      break;
    case 'FinalHtlcTimeout':
    case 'FinalHtlcMinimumExpiryDelta':
      body = uintLe(attr.value, 8);
      break;
    case 'Description':
    case 'FallbackAddr':
      body = table([fixBytes(utf8.encode(attr.value))]);
      break;
    case 'Feature':
      body = table([fixBytes(attr.bytes)]);
      break;
    case 'UdtScript':
      body = table([attr.script]);
      break;
    case 'PayeePublicKey':
      body = table([fixBytes(attr.pubkey)]);
      break;
    case 'HashAlgorithm':
      body = Uint8Array.of(attr.value === 'sha256' ? 1 : 0);
      break;
    case 'PaymentSecret':
      body = attr.value;
      break;
  }
  return concat([u32le(id), body]);
}

export function encodeRawInvoiceData(data: InvoiceData): Uint8Array {
  if (data.paymentHash.length !== 32) throw new RangeError('payment hash must be 32 bytes');
  return table([uintLe(data.timestamp, 16), data.paymentHash, table(data.attrs.map(encodeAttr))]);
}

// ---------------------------------------------------------------- reading

function readU32(b: Uint8Array, at: number): number {
  return (b[at] | (b[at + 1] << 8) | (b[at + 2] << 16)) + b[at + 3] * 0x1000000;
}

function readUintLe(b: Uint8Array): bigint {
  let v = 0n;
  for (let i = b.length - 1; i >= 0; i--) v = (v << 8n) | BigInt(b[i]);
  return v;
}

/** Splits a table or dynvec into its items, verifying the header as molecule does. */
function items(name: string, b: Uint8Array, fieldCount?: number): Uint8Array[] {
  if (b.length < 4) throw moleculeError(`${name} header is broken, expect 4 but got ${b.length}`);
  const total = readU32(b, 0);
  if (total !== b.length) {
    throw moleculeError(`${name} total size doesn't match, expect ${total}, actual ${b.length}`);
  }
  if (b.length === 4) {
    if (fieldCount === undefined || fieldCount === 0) return [];
    throw moleculeError(`${name} field count doesn't match, expect ${fieldCount}, actual 0`);
  }
  if (b.length < 8) throw moleculeError(`${name} header is broken, expect 8 but got ${b.length}`);
  const first = readU32(b, 4);
  if (first % 4 !== 0 || first < 8) throw moleculeError(`${name} offsets not match`);
  if (b.length < first) throw moleculeError(`${name} header is broken, expect ${first} but got ${b.length}`);
  const count = first / 4 - 1;
  if (fieldCount !== undefined && count !== fieldCount) {
    throw moleculeError(`${name} field count doesn't match, expect ${fieldCount}, actual ${count}`);
  }
  const offsets: number[] = [];
  for (let i = 0; i < count; i++) offsets.push(readU32(b, 4 + 4 * i));
  offsets.push(total);
  const out: Uint8Array[] = [];
  for (let i = 0; i < count; i++) {
    if (offsets[i] > offsets[i + 1]) throw moleculeError(`${name} offsets not match`);
    out.push(b.subarray(offsets[i], offsets[i + 1]));
  }
  return out;
}

function struct(name: string, b: Uint8Array, size: number): Uint8Array {
  if (b.length !== size)
    throw moleculeError(`${name} total size doesn't match, expect ${size}, actual ${b.length}`);
  return b;
}

function bytesField(name: string, b: Uint8Array): Uint8Array {
  if (b.length < 4) throw moleculeError(`${name} header is broken, expect 4 but got ${b.length}`);
  const n = readU32(b, 0);
  if (4 + n !== b.length)
    throw moleculeError(`${name} total size doesn't match, expect ${4 + n}, actual ${b.length}`);
  return b.subarray(4);
}

/** Verifies a molecule `Script` table (code_hash, hash_type, args) and returns it unchanged. */
export function verifyScript(b: Uint8Array): Uint8Array {
  const [codeHash, hashType, args] = items('Script', b, 3);
  struct('Byte32', codeHash, 32);
  struct('byte', hashType, 1);
  bytesField('Bytes', args);
  return b;
}

const utf8Strict = new TextDecoder('utf-8', { fatal: true });

function text(kind: string, b: Uint8Array): string {
  try {
    return utf8Strict.decode(b);
  } catch {
    throw new InvoiceError('InvalidUtf8', `${kind} is not valid UTF-8`);
  }
}

function decodeAttr(b: Uint8Array): InvoiceAttr {
  if (b.length < 4) throw moleculeError(`InvoiceAttr header is broken, expect 4 but got ${b.length}`);
  const id = readU32(b, 0);
  const body = b.subarray(4);
  switch (ATTR_KINDS[id]) {
    case 'ExpiryTime':
      if (body.length === 16) {
        // Fiber ≤ v0.4 wrote a Duration {seconds: Uint64, nanos: Uint64}; real invoices of that
        // era are still in circulation (the testnet guide's examples), so they are accepted.
        return {
          kind: 'ExpiryTime',
          seconds: readUintLe(body.subarray(0, 8)),
          legacyNanos: readUintLe(body.subarray(8)),
        };
      }
      return { kind: 'ExpiryTime', seconds: readUintLe(struct('ExpiryTime', body, 8)) };
    case 'Description':
      return {
        kind: 'Description',
        value: text('Description', bytesField('Bytes', items('Description', body, 1)[0])),
      };
    case 'FinalHtlcTimeout':
      return { kind: 'FinalHtlcTimeout', value: readUintLe(struct('FinalHtlcTimeout', body, 8)) };
    case 'FinalHtlcMinimumExpiryDelta':
      return {
        kind: 'FinalHtlcMinimumExpiryDelta',
        value: readUintLe(struct('FinalHtlcMinimumExpiryDelta', body, 8)),
      };
    case 'FallbackAddr':
      return {
        kind: 'FallbackAddr',
        value: text('FallbackAddr', bytesField('Bytes', items('FallbackAddr', body, 1)[0])),
      };
    case 'Feature':
      return { kind: 'Feature', bytes: bytesField('Bytes', items('Feature', body, 1)[0]).slice() };
    case 'UdtScript':
      return { kind: 'UdtScript', script: verifyScript(items('UdtScript', body, 1)[0]).slice() };
    case 'PayeePublicKey': {
      const key = compressedPubkey(bytesField('Bytes', items('PayeePublicKey', body, 1)[0]));
      if (!key) throw new InvoiceError('InvalidPubkey', 'PayeePublicKey is not a valid public key');
      return { kind: 'PayeePublicKey', pubkey: key };
    }
    case 'HashAlgorithm': {
      // Unknown algorithm bytes decode as the default (ckb hash), as the reference does.
      const v = struct('HashAlgorithm', body, 1)[0];
      const value: HashAlgorithm = v === 1 ? 'sha256' : 'ckb_hash';
      return { kind: 'HashAlgorithm', value };
    }
    case 'PaymentSecret':
      return { kind: 'PaymentSecret', value: struct('PaymentSecret', body, 32).slice() };
    default:
      throw moleculeError(`InvoiceAttr unknown item, expect less than ${ATTR_KINDS.length} but got ${id}`);
  }
}

/**
 * Accepts compressed (33) or uncompressed (65) keys, as secp256k1 `PublicKey::from_slice`, and
 * returns the compressed form (the reference re-encodes the key compressed).
 */
function compressedPubkey(key: Uint8Array): Uint8Array | undefined {
  if (key.length !== 33 && key.length !== 65) return undefined;
  try {
    return secp256k1.Point.fromBytes(key).toBytes(true);
  } catch {
    return undefined;
  }
}

export function decodeRawInvoiceData(b: Uint8Array): InvoiceData {
  const [ts, hash, attrs] = items('RawInvoiceData', b, 3);
  return {
    timestamp: readUintLe(struct('Uint128', ts, 16)),
    paymentHash: struct('PaymentHash', hash, 32).slice(),
    attrs: items('InvoiceAttrsVec', attrs).map(decodeAttr),
  };
}
