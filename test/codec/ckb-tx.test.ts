/**
 * The direct molecule writer of CKB transactions (`codec/ckb-tx.ts`) against @ckb-ccc/core, the
 * encoding the chain and fiber-js use: random transactions (deps of both kinds, header deps,
 * inputs, outputs with and without a type script, data, witnesses, every hash type, empty
 * vectors) give the same bytes and the same hash.
 */
import { ccc } from '@ckb-ccc/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { cellOutputBytes, rawTxBytes, txBytes } from '../../src/codec/ckb-tx.ts';
import { ckbHash } from '../../src/crypto/hash.ts';

const hex = (b: Uint8Array) => ccc.hexFrom(b);
const bytes = (max: number) => fc.uint8Array({ maxLength: max }).map(hex);
const hash32 = fc.uint8Array({ minLength: 32, maxLength: 32 }).map(hex);
const u64 = fc.bigInt({ min: 0n, max: (1n << 64n) - 1n });
const u32 = fc.integer({ min: 0, max: 0xffff_ffff });
/** A since ccc can read back: absolute or relative, by block, epoch or timestamp. */
const since = fc
  .tuple(
    fc.constantFrom(0x00n, 0x20n, 0x40n, 0x80n, 0xa0n, 0xc0n),
    fc.bigInt({ min: 0n, max: (1n << 56n) - 1n }),
  )
  .map(([flags, value]) => (flags << 56n) | value);
const script = fc.record({
  codeHash: hash32,
  hashType: fc.constantFrom('data', 'type', 'data1', 'data2'),
  args: bytes(80),
});
const outPoint = fc.record({ txHash: hash32, index: u32 });
const output = fc.record({ capacity: u64, lock: script, type: fc.option(script, { nil: undefined }) });
const tx = fc.record({
  version: u32,
  cellDeps: fc.array(fc.record({ outPoint, depType: fc.constantFrom('code', 'depGroup') }), { maxLength: 4 }),
  headerDeps: fc.array(hash32, { maxLength: 3 }),
  inputs: fc.array(fc.record({ previousOutput: outPoint, since }), { maxLength: 4 }),
  outputs: fc.array(output, { maxLength: 4 }),
  outputsData: fc.array(bytes(40), { maxLength: 5 }),
  witnesses: fc.array(bytes(120), { maxLength: 4 }),
});

describe('CKB transactions written directly', () => {
  it('match ccc byte for byte: raw, whole, hash, without cell deps, and each output', () => {
    fc.assert(
      fc.property(tx, (t) => {
        const c = ccc.Transaction.from(t);
        expect(hex(rawTxBytes(c))).toBe(hex(c.rawToBytes()));
        expect(hex(txBytes(c))).toBe(hex(c.toBytes()));
        expect(hex(ckbHash(rawTxBytes(c)))).toBe(c.hash());
        const noDeps = c.clone();
        noDeps.cellDeps = [];
        expect(hex(rawTxBytes(c, { withCellDeps: false }))).toBe(hex(noDeps.rawToBytes()));
        for (const o of c.outputs) expect(hex(cellOutputBytes(o))).toBe(hex(o.toBytes()));
      }),
      { numRuns: 400 },
    );
  });

  it('refuses what molecule cannot carry', () => {
    const lock = { codeHash: `0x${'00'.repeat(32)}`, hashType: 'type' as const, args: '0x' };
    const c = ccc.Transaction.from({ outputs: [{ capacity: 1n, lock }] });
    (c.outputs[0]!.lock as { hashType: string }).hashType = 'data9';
    expect(() => rawTxBytes(c)).toThrow(/hash type/);
  });
});
