/**
 * Zod building blocks for RPC params, following Fiber's JSON conventions
 * (`docs/reference/fiber-rpc.md` §3): quantities are strict hex strings parsed to bigint,
 * hashes are 32 bytes with or without `0x`, pubkeys are 33-byte compressed keys.
 */
import { z } from 'zod';
import { U32_MAX, U64_MAX, U128_MAX } from '../codec/index.ts';

const QUANTITY = /^0x(0|[1-9a-fA-F][0-9a-fA-F]*)$/;

/** Most characters of a request's input that an error message repeats. */
export const MAX_ECHO = 200;

/** `input` as an error message may quote it: cut to MAX_ECHO characters. */
export function echo(input: string): string {
  return input.length > MAX_ECHO ? `${input.slice(0, MAX_ECHO)}…(${input.length} chars)` : input;
}

function quantity(max: bigint, label: string) {
  return z
    .string({ error: `expected a ${label} hex quantity string` })
    .regex(QUANTITY, { error: 'invalid hex quantity (0x-prefixed, no leading zeros)' })
    .transform((s, ctx) => {
      const v = BigInt(s);
      if (v > max) {
        ctx.addIssue({
          code: 'custom',
          message: `${echo(s)} exceeds the ${label} maximum 0x${max.toString(16)}`,
        });
        return z.NEVER;
      }
      return v;
    });
}

export const u32 = quantity(U32_MAX, 'u32');
export const u64 = quantity(U64_MAX, 'u64');
export const u128 = quantity(U128_MAX, 'u128');

function fixedHex(bytes: number, what: string) {
  const re = new RegExp(`^(0x)?[0-9a-fA-F]{${bytes * 2}}$`);
  return z
    .string({ error: `expected ${what}` })
    .regex(re, { error: `expected ${what} (${bytes} bytes hex)` })
    .transform((s) => (s.startsWith('0x') ? s.toLowerCase() : '0x' + s.toLowerCase()));
}

/** 32-byte hash, normalised to `0x` + lower-case hex. */
export const h256 = fixedHex(32, 'a 32-byte hash');

/** Compressed secp256k1 public key, normalised to 66 lower-case hex chars WITHOUT `0x`. */
export const pubkey = z
  .string({ error: 'expected a public key' })
  .regex(/^(0x)?0[23][0-9a-fA-F]{64}$/, { error: 'expected a 33-byte compressed public key in hex' })
  .transform((s) => (s.startsWith('0x') ? s.slice(2) : s).toLowerCase());

/** Arbitrary `0x`-prefixed bytes (may be `0x`). */
export const bytes = z
  .string({ error: 'expected 0x-prefixed hex bytes' })
  .regex(/^0x([0-9a-fA-F]{2})*$/, { error: 'expected 0x-prefixed hex bytes' })
  .transform((s) => s.toLowerCase());

export const hashType = z.enum(['type', 'data', 'data1', 'data2']);

/** CKB JSON script. */
export const script = z.object({
  code_hash: fixedHex(32, 'a 32-byte code hash'),
  hash_type: hashType,
  args: bytes,
});
export type ScriptJson = z.output<typeof script>;
