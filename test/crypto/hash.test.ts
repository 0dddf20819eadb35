import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { ckbHash, hashBackend, hashReady, nobleCkbHash } from '../../src/crypto/hash.ts';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

describe("CKB's hash in WebAssembly", () => {
  beforeAll(async () => {
    expect(await hashReady).toBeUndefined();
  });

  it('is the backend in use once ready', () => {
    expect(hashBackend()).toEqual({ name: 'wasm' });
  });

  it("gives CKB's known hash of nothing", () => {
    expect(hex(ckbHash(new Uint8Array(0)))).toBe(
      '44f4c69744d5f8c55d642062949dcae49bc4e7ef43d388c5a12f42b5633d163e',
    );
  });

  it('matches the pure-JS hash on any parts', () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 700 }), { maxLength: 6 }), (parts) => {
        expect(hex(ckbHash(...parts))).toBe(hex(nobleCkbHash(parts)));
      }),
      { numRuns: 500 },
    );
  });

  it('stays right across a growth of its memory (an input larger than the module has)', () => {
    const big = new Uint8Array(300_000).map((_, i) => i * 7);
    const small = new Uint8Array([1, 2, 3]);
    const before = hex(ckbHash(small));
    expect(hex(ckbHash(big))).toBe(hex(nobleCkbHash([big])));
    expect(hex(ckbHash(small))).toBe(before);
    expect(hex(ckbHash(small, big, small))).toBe(hex(nobleCkbHash([small, big, small])));
  });

  it('returns a copy the next hash does not overwrite', () => {
    const a = ckbHash(new Uint8Array([1]));
    const kept = hex(a);
    ckbHash(new Uint8Array([2]));
    expect(hex(a)).toBe(kept);
  });
});
