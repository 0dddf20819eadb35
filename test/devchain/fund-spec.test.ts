/** `strand devchain --fund <account>:<CKB>[:<UDT>[:<xUDT>]]`: which part is which amount. */
import { ccc } from '@ckb-ccc/core';
import { describe, expect, it } from 'vitest';
import { parseAccount } from '../../src/cli/devchain.ts';

const lock = ccc.Script.from({ codeHash: `0x${'00'.repeat(32)}`, hashType: 'type', args: '0x' });
const seen: string[] = [];
const parse = (spec: string) =>
  parseAccount(spec, (account) => {
    seen.push(account);
    return lock;
  });

describe('--fund', () => {
  it('reads CKB, then the test UDT, then the test xUDT', () => {
    expect(parse('0xaa:100')).toMatchObject({
      capacity: 100n * 100_000_000n,
      udt: undefined,
      xudt: undefined,
    });
    expect(parse('0xaa:1.5:7')).toMatchObject({ capacity: 150_000_000n, udt: 7n, xudt: undefined });
    expect(parse('0xaa:100:7:9')).toMatchObject({ udt: 7n, xudt: 9n });
    expect(parse('0xaa:100::9')).toMatchObject({ udt: undefined, xudt: 9n });
    expect(seen.every((a) => a === '0xaa')).toBe(true);
  });

  it('keeps a colon in a key file path, and refuses what is not an amount', () => {
    seen.length = 0;
    parse('C:/keys/plain_key:100:1');
    expect(seen).toEqual(['C:/keys/plain_key']);
    expect(() => parse('0xaa')).toThrow(/expected <account>:<CKB>\[:<UDT>\[:<xUDT>\]\]/);
    expect(() => parse('0xaa:100:1.5')).toThrow(/whole numbers/);
  });
});
