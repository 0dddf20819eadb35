import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidParams } from '../../src/codec/errors.ts';
import {
  bytesToHex,
  hexToBytes,
  parseHexQuantity,
  toHexQuantity,
  U64_MAX,
  U128_MAX,
} from '../../src/codec/hex.ts';

describe('hex quantities', () => {
  it('writes without leading zeros', () => {
    expect(toHexQuantity(0n)).toBe('0x0');
    expect(toHexQuantity(255)).toBe('0xff');
    expect(toHexQuantity(100_000_000n)).toBe('0x5f5e100');
    expect(() => toHexQuantity(-1n)).toThrow(RangeError);
  });

  it.each([
    ['0x01', 'leading zero'],
    ['0x', 'empty'],
    ['-0x1', 'negative'],
    ['0x-1', 'negative'],
    ['1', 'no prefix'],
    ['0xg1', 'not hex'],
    [' 0x1', 'whitespace'],
    ['0X1', 'upper-case prefix'],
  ])('rejects %s (%s)', (input) => {
    expect(() => parseHexQuantity(input, 'amount')).toThrow(InvalidParams);
    expect(() => parseHexQuantity(input, 'amount')).toThrow(/amount/);
  });

  it('rejects non-strings, naming the field', () => {
    expect(() => parseHexQuantity(5, 'fee_rate')).toThrow(/fee_rate: expected/);
    expect(() => parseHexQuantity(null, 'fee_rate')).toThrow(InvalidParams);
  });

  it('enforces the maximum of the type', () => {
    expect(parseHexQuantity('0xffffffffffffffff', 'x', U64_MAX)).toBe(U64_MAX);
    expect(() => parseHexQuantity('0x10000000000000000', 'x', U64_MAX)).toThrow(/exceeds/);
    expect(parseHexQuantity(toHexQuantity(U128_MAX), 'x')).toBe(U128_MAX);
    expect(() => parseHexQuantity(toHexQuantity(U128_MAX + 1n), 'x')).toThrow(/exceeds/);
    expect(() => parseHexQuantity('0x1' + '0'.repeat(200), 'x')).toThrow(/exceeds/);
  });

  it('round-trips every u128', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 0n, max: U128_MAX }),
        (v) => parseHexQuantity(toHexQuantity(v), 'v') === v,
      ),
    );
  });
});

describe('hex bytes', () => {
  it('round-trips with and without prefix', () => {
    const b = new Uint8Array([0, 1, 0xab, 0xff]);
    expect(bytesToHex(b)).toBe('0x0001abff');
    expect(bytesToHex(b, false)).toBe('0001abff');
    expect(hexToBytes('0x0001abff')).toEqual(b);
    expect(hexToBytes('0001ABFF')).toEqual(b);
  });

  it('checks length and characters', () => {
    expect(() => hexToBytes('0x00', 'hash', 32)).toThrow(/hash: expected 32 bytes, got 1/);
    expect(() => hexToBytes('0x0', 'h')).toThrow(InvalidParams);
    expect(() => hexToBytes('0xzz', 'h')).toThrow(InvalidParams);
    expect(() => hexToBytes(42, 'h')).toThrow(/h: expected hex bytes, got 42/);
  });

  it('takes exactly the strings of 0x? then hex pairs (any mix of valid and invalid characters)', () => {
    const valid = /^(0x)?([0-9a-fA-F]{2})*$/;
    const chars = fc.constantFrom(...'0123456789abcdefABCDEFxXgz -\n'.split(''));
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: chars }), fc.string()), fc.boolean(), (body, prefixed) => {
        const s = prefixed ? `0x${body}` : body;
        if (valid.test(s)) expect(bytesToHex(hexToBytes(s), false)).toBe(s.replace(/^0x/, '').toLowerCase());
        else expect(() => hexToBytes(s)).toThrow(InvalidParams);
      }),
      { numRuns: 2000 },
    );
  });
});
