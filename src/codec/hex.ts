/**
 * Hex encodings used at the RPC and wire boundaries.
 *
 * Quantities (u32/u64/u128) are written `0x` + lower-case hex without leading zeros (`0x0` for
 * zero), the convention of CKB and Fiber. Parsing is strict: `0x01`, `0x`, a missing prefix, a
 * sign or a value above the type's maximum are rejected with an error naming the field.
 */
import { InvalidParams } from './errors.ts';

export const U32_MAX = 0xffff_ffffn;
/** Shannons in one CKB (the chain's base unit, 10^8). */
export const SHANNONS_PER_CKB = 100_000_000n;
export const U64_MAX = 0xffff_ffff_ffff_ffffn;
export const U128_MAX = (1n << 128n) - 1n;

const QUANTITY = /^0x(0|[1-9a-fA-F][0-9a-fA-F]*)$/;

/** Writes a non-negative integer as a hex quantity. */
export function toHexQuantity(value: bigint | number): string {
  const v = typeof value === 'number' ? BigInt(value) : value;
  if (v < 0n) throw new RangeError(`negative quantity ${v}`);
  return '0x' + v.toString(16);
}

/** Parses a hex quantity no larger than `max`; `field` names the input in the error. */
export function parseHexQuantity(input: unknown, field: string, max: bigint = U128_MAX): bigint {
  if (typeof input !== 'string') throw new InvalidParams(`${field}: expected a 0x-prefixed hex string`);
  if (!QUANTITY.test(input)) {
    throw new InvalidParams(
      `${field}: invalid hex quantity '${clip(input)}' (0x-prefixed, no leading zeros)`,
    );
  }
  if (input.length > 2 + Math.ceil(max.toString(16).length)) {
    throw new InvalidParams(`${field}: value ${clip(input)} exceeds the maximum ${toHexQuantity(max)}`);
  }
  const v = BigInt(input);
  if (v > max)
    throw new InvalidParams(`${field}: value ${clip(input)} exceeds the maximum ${toHexQuantity(max)}`);
  return v;
}

/** Bytes to `0x`-prefixed lower-case hex. */
export function bytesToHex(bytes: Uint8Array, prefix = true): string {
  return (prefix ? '0x' : '') + Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
}

/**
 * Hex (with or without `0x`) to bytes. `length` enforces an exact byte length.
 * Throws InvalidParams naming `field`.
 */
export function hexToBytes(input: unknown, field = 'value', length?: number): Uint8Array {
  const body = typeof input === 'string' ? (input.startsWith('0x') ? input.slice(2) : input) : null;
  // Node's decoder stops at the first pair that is not hex, so a full-length result is the check
  // (a regular expression over a 13 KB onion cost more than the decoding itself).
  const bytes = body !== null && body.length % 2 === 0 ? Buffer.from(body, 'hex') : null;
  if (!bytes || bytes.length * 2 !== body!.length) {
    throw new InvalidParams(`${field}: expected hex bytes, got ${clip(String(input))}`);
  }
  if (length !== undefined && bytes.length !== length) {
    throw new InvalidParams(`${field}: expected ${length} bytes, got ${bytes.length}`);
  }
  // A copy: a small Buffer is a view into Node's shared pool.
  return new Uint8Array(bytes);
}

function clip(s: string): string {
  return s.length > 80 ? s.slice(0, 77) + '...' : s;
}
