/**
 * The declarative molecule schemas (`codec/schema.ts`): strict and compatible tables, the
 * reference's verification order and texts, both directions from one declaration; every defect a
 * MoleculeError, which the P2P layer reports as Malformed with the same text.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MoleculeError, mol } from '../../src/codec/index.ts';
import { decodeProtocolInfo, encodeProtocolInfo } from '../../src/p2p/protocol-select.ts';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const T = mol.table('T', { a: mol.utf8(), b: mol.bytes(), c: mol.u8 });
const T2 = mol.table('T2', { a: mol.utf8(), b: mol.bytes() });
const T2c = mol.table('T2', { a: mol.utf8(), b: mol.bytes() }, { compatible: true });
const T4c = mol.table('T4', { a: mol.utf8(), b: mol.bytes(), c: mol.u8, d: mol.u8 }, { compatible: true });
const three = T.encode({ a: 'a', b: new Uint8Array([1, 2]), c: 7 });

describe('molecule schemas', () => {
  it('write the molecule layout: table header, fixvec count, struct fields in order', () => {
    expect(hex(three)).toBe(
      `1c000000 10000000 15000000 1b000000 01000000 61 02000000 0102 07`.replace(/ /g, ''),
    );
    const S = mol.struct('S', { x: mol.u16, y: mol.u64 });
    expect(S.size).toBe(10);
    expect(hex(S.encode({ x: 0x0102, y: 3n }))).toBe('02010300000000000000');
    expect(hex(mol.fixvec('V', mol.u16).encode([1, 2]))).toBe('0200000001000200');
    expect(hex(mol.dynvec('D', mol.bytes()).encode([]))).toBe('04000000');
    expect(hex(mol.option(mol.u8).encode(null))).toBe('');
    const U = mol.union('U', { a: mol.u8, b: mol.u16 }, { a: 3, b: 9 });
    expect(hex(U.encode({ type: 'b', value: 5 }))).toBe('090000000500');
    expect(U.decode(U.encode({ type: 'a', value: 5 }))).toEqual({ type: 'a', value: 5 });
    expect(mol.u128.decode(mol.u128.encode((1n << 128n) - 1n))).toBe((1n << 128n) - 1n);
  });

  it('a strict table must have exactly its fields; a compatible one at least them', () => {
    expect(T.decode(three)).toEqual({ a: 'a', b: new Uint8Array([1, 2]), c: 7 });
    expect(() => T2.decode(three)).toThrow(
      new MoleculeError("T2Reader field count doesn't match, expect 2, actual 3"),
    );
    expect(T2c.decode(three)).toEqual({ a: 'a', b: new Uint8Array([1, 2]) });
    expect(() => T4c.decode(three)).toThrow(
      new MoleculeError("T4Reader field count doesn't match, expect 4, actual 3"),
    );
    expect(() => T2c.decode(new Uint8Array([4, 0, 0, 0]))).toThrow(
      new MoleculeError('T2Reader total size is not enough for header, expect 8, actual 4'),
    );
    expect(mol.dynvec('D', T).decode(new Uint8Array([4, 0, 0, 0]))).toEqual([]);
  });

  it('check sizes, offsets, counts and union ids in the reference order, with its texts', () => {
    expect(() => T.decode(three.subarray(0, 3))).toThrow(
      new MoleculeError('TReader total size is not enough for header, expect 4, actual 3'),
    );
    expect(() => T.decode(three.subarray(0, 20))).toThrow(
      new MoleculeError("TReader total size doesn't match, expect 28, actual 20"),
    );
    const unordered = three.slice();
    unordered[8] = 0x1c; // second offset after the third
    expect(() => T.decode(unordered)).toThrow(new MoleculeError('TReader some offsets is not match'));
    const misaligned = three.slice();
    misaligned[4] = 0x11;
    expect(() => T.decode(misaligned)).toThrow(new MoleculeError('TReader some offsets is not match'));
    expect(() => mol.bytes().decode(new Uint8Array([3, 0, 0, 0, 1]))).toThrow(
      new MoleculeError("BytesReader total size doesn't match, expect 7, actual 5"),
    );
    expect(() => mol.byteArray(32).decode(new Uint8Array(31))).toThrow(
      new MoleculeError("Byte32Reader total size doesn't match, expect 32, actual 31"),
    );
    expect(() => mol.union('U', { a: mol.u8 }).decode(new Uint8Array([1, 0, 0, 0, 5]))).toThrow(
      new MoleculeError('UReader item id (=1) is an unknown id, only has 1 kind of items'),
    );
    expect(() => mol.utf8().decode(new Uint8Array([1, 0, 0, 0, 0xff]))).toThrow(
      new MoleculeError('Bytes: not valid UTF-8'),
    );
  });

  it('refuse to write a value of the wrong size or range', () => {
    expect(() => mol.byteArray(33).encode(new Uint8Array(32))).toThrow(MoleculeError);
    expect(() => mol.u64.encode(1n << 64n)).toThrow(MoleculeError);
    expect(() => mol.u64.encode(-1n)).toThrow(MoleculeError);
    expect(() => mol.u16.encode(65536)).toThrow(MoleculeError);
  });

  it('raise nothing but MoleculeError on random bytes', () => {
    const Nested = mol.table('N', {
      s: mol.struct('S', { x: mol.u32, y: mol.byteArray(3) }),
      v: mol.dynvec('V', mol.option(mol.union('U', { a: mol.bytes(), b: mol.fixvec('F', mol.u16) }))),
      t: T2c,
    });
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
        try {
          Nested.decode(bytes);
        } catch (e) {
          expect(e).toBeInstanceOf(MoleculeError);
        }
      }),
      { numRuns: 3000 },
    );
  });

  it('the P2P decoders report a molecule defect as Malformed, with the same text', () => {
    const extended = T4c.encode({ a: '/p2p/42', b: new Uint8Array(0), c: 1, d: 2 });
    expect(() => decodeProtocolInfo(extended)).toThrow(expect.objectContaining({ kind: 'Malformed' }));
    const good = encodeProtocolInfo({ name: '/p2p/42', supportVersions: ['0.0.1'] });
    const withExtra = mol
      .table('P', { n: mol.utf8(), v: mol.dynvec('V', mol.utf8()), x: mol.u8 })
      .encode({ n: '/p2p/42', v: ['0.0.1'], x: 1 });
    expect(decodeProtocolInfo(withExtra)).toEqual(decodeProtocolInfo(good));
    expect(() => decodeProtocolInfo(mol.table('P', { n: mol.utf8() }).encode({ n: '/p2p/42' }))).toThrow(
      expect.objectContaining({
        kind: 'Malformed',
        message: "ProtocolInfoReader field count doesn't match, expect 2, actual 1",
      }),
    );
  });
});
