/**
 * The molecule helpers' two table modes and strings: a strict table has exactly its fields, a
 * compatible one at least them (a newer peer's extra fields come back after the known ones);
 * every defect is a MoleculeError, which the P2P layer reports as Malformed with the same text.
 */
import { describe, expect, it } from 'vitest';
import {
  MoleculeError,
  readCompatibleTable,
  readTable,
  readUtf8String,
  table,
  utf8String,
} from '../../src/codec/molecule.ts';
import { decodeProtocolInfo } from '../../src/p2p/protocol-select.ts';

const three = table([utf8String('a'), utf8String('bc'), new Uint8Array([7])]);

describe('molecule tables', () => {
  it('a strict table must have exactly its fields; a compatible one at least them', () => {
    expect(readTable(three, 'T', 3).map((f) => f.length)).toEqual([5, 6, 1]);
    expect(() => readTable(three, 'T', 2)).toThrow(new MoleculeError('T: expected 2 fields, got 3'));
    expect(readCompatibleTable(three, 'T', 2).map((f) => f.length)).toEqual([5, 6, 1]);
    expect(() => readCompatibleTable(three, 'T', 4)).toThrow(
      new MoleculeError('T: expected 4 fields, got 3'),
    );
    expect(() => readCompatibleTable(table([]), 'T', 1)).toThrow(
      new MoleculeError('T: expected 1 fields, got 0'),
    );
    expect(readTable(table([]), 'dynvec')).toEqual([]);
  });

  it('strings are UTF-8 fixvecs; invalid UTF-8 is refused', () => {
    expect(readUtf8String(utf8String('/p2p/42 ✓'), 's')).toBe('/p2p/42 ✓');
    expect(() => readUtf8String(new Uint8Array([1, 0, 0, 0, 0xff]), 's')).toThrow(
      new MoleculeError('s: not valid UTF-8'),
    );
  });

  it('the P2P decoders report a molecule defect as Malformed, with the same text', () => {
    const extended = table([utf8String('/p2p/42'), table([utf8String('0.0.1')]), new Uint8Array([1])]);
    expect(decodeProtocolInfo(extended)).toEqual({ name: '/p2p/42', supportVersions: ['0.0.1'] });
    expect(() => decodeProtocolInfo(table([utf8String('/p2p/42')]))).toThrow(
      expect.objectContaining({ kind: 'Malformed', message: "ProtocolInfoReader field count doesn't match, expect 2, actual 1" }),
    );
  });
});
