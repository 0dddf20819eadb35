import { describe, expect, it } from 'vitest';
import { readUdtWhitelist, UdtWhitelist, UdtWhitelistError } from '../../src/chain/udt-whitelist.ts';

const CODE = `0x${'e1'.repeat(32)}`;
const TX = `0x${'ab'.repeat(32)}`;
const entry = (args: string, extra: Record<string, unknown> = {}) => ({
  name: 'TOKEN',
  script: { code_hash: CODE, hash_type: 'data2', args },
  cell_deps: [{ cell_dep: { out_point: { tx_hash: TX, index: '0x8' }, dep_type: 'code' } }],
  ...extra,
});
const token = (args: string) => ({ codeHash: CODE, hashType: 'data2' as const, args });

function refusal(list: unknown): string {
  try {
    readUdtWhitelist(list);
  } catch (e) {
    expect(e).toBeInstanceOf(UdtWhitelistError);
    return (e as Error).message;
  }
  throw new Error('accepted');
}

describe('the UDT whitelist', () => {
  it('matches args given as a pattern, as fnn does', () => {
    const w = readUdtWhitelist([entry('0x.*')]);
    expect(w.match(token(`0x${'12'.repeat(32)}`))?.name).toBe('TOKEN');
    expect(w.match(token('0x'))?.name).toBe('TOKEN');
    expect(w.match({ ...token('0x12'), hashType: 'type' })).toBeUndefined();
    expect(UdtWhitelist.cellDeps(w.match(token('0x12')))).toEqual([
      { outPoint: { txHash: TX, index: 8n }, depType: 'code' },
    ]);
  });

  it('matches hex args exactly (not as a prefix), whatever the case', () => {
    const w = readUdtWhitelist([entry('0xAB12')]);
    expect(w.match(token('0xab12'))).toBeDefined();
    expect(w.match(token('0xab1234'))).toBeUndefined();
  });

  it('refuses a bad entry naming it', () => {
    expect(refusal([entry('0x.*'), entry('0x(')])).toMatch(
      /^udt_whitelist\[1\]\.script\.args: '0x\(' is neither 0x-prefixed hex bytes nor a valid pattern/,
    );
    expect(refusal([{ ...entry('0x'), script: { code_hash: '0x12', hash_type: 'data2', args: '0x' } }])).toBe(
      "udt_whitelist[0].script.code_hash: expected 0x + 32 bytes hex, got '0x12'",
    );
    expect(refusal([entry('0x', { cell_deps: [{ bogus: true }] })])).toContain(
      'udt_whitelist[0].cell_deps[0]',
    );
    expect(
      refusal([
        entry('0x', { cell_deps: [{ cell_dep: { out_point: { tx_hash: TX, index: '0x1ffffffff' } } }] }),
      ]),
    ).toContain('udt_whitelist[0].cell_deps[0].cell_dep.out_point.index: expected a u32');
    expect(refusal([entry('0x', { auto_accept_amount: -1 })])).toContain(
      'auto_accept_amount: expected a u128',
    );
    expect(refusal([entry('0x', { name: '' })])).toContain('udt_whitelist[0].name');
  });
});
