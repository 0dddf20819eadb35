/**
 * The channel transactions' byte writers against what they replace: fixed-width integers as
 * ccc writes them, the settlement script as concatenated fields (§5.3), and the memoized hashes
 * of commitment-lock args against hashing afresh, on random inputs.
 */
import { ccc } from '@ckb-ccc/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { aggregateXOnly } from '../../src/channel/musig.ts';
import {
  be64,
  commitmentLockArgs,
  delaySince,
  le64,
  le128,
  type SettlementTlc,
  settlementScript,
} from '../../src/channel/tx.ts';
import { concat } from '../../src/codec/index.ts';
import { blake160 } from '../../src/crypto/hash.ts';
import { curve } from '../../src/crypto/index.ts';

const bytes = (n: number) => fc.uint8Array({ minLength: n, maxLength: n });
const uint = (bits: number) => fc.bigInt({ min: 0n, max: (1n << BigInt(bits)) - 1n });

describe('channel tx bytes', () => {
  it('writes fixed-width integers as ccc does, and refuses the same overflow', () => {
    fc.assert(
      fc.property(uint(64), uint(128), (a, b) => {
        expect(le64(a)).toEqual(ccc.numLeToBytes(a, 8));
        expect(be64(a)).toEqual(ccc.numBeToBytes(a, 8));
        expect(le128(b)).toEqual(ccc.numLeToBytes(b, 16));
      }),
      { numRuns: 500 },
    );
    expect(le64(-1n)).toEqual(ccc.numLeToBytes(-1n, 8));
    expect(() => le64(1n << 64n)).toThrow(/overflow/);
    expect(() => le128(1n << 128n)).toThrow(/overflow/);
  });

  const tlc = fc.record({
    offeredByHolder: fc.boolean(),
    hashAlgorithm: fc.integer({ min: 0, max: 1 }),
    amount: uint(128),
    paymentHash: bytes(32),
    holderKeyHash: bytes(20),
    otherKeyHash: bytes(20),
    expiry: fc.bigInt({ min: 0n, max: (1n << 56n) * 1000n - 1n }),
  });

  it('writes the settlement script field by field (§5.3)', () => {
    fc.assert(
      fc.property(
        fc.array(tlc, { maxLength: 40 }),
        bytes(20),
        uint(128),
        bytes(20),
        uint(128),
        (tlcs, hp, ha, op, oa) => {
          const expected = concat(
            new Uint8Array([tlcs.length]),
            ...tlcs.map((t: SettlementTlc) =>
              concat(
                new Uint8Array([(t.hashAlgorithm << 1) | (t.offeredByHolder ? 1 : 0)]),
                ccc.numLeToBytes(t.amount, 16),
                t.paymentHash.subarray(0, 20),
                t.holderKeyHash,
                t.otherKeyHash,
                ccc.numLeToBytes((0x40n << 56n) | (t.expiry / 1000n), 8),
              ),
            ),
            hp,
            ccc.numLeToBytes(ha, 16),
            op,
            ccc.numLeToBytes(oa, 16),
          );
          const p = { holderPkh: hp, holderAmount: ha, otherPkh: op, otherAmount: oa };
          expect(settlementScript(tlcs, p)).toEqual(expected);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('hashes args afresh for every script and key pair, however often one comes again', () => {
    const keys = [1, 2, 3].map((i) => curve().mulG(new Uint8Array(32).fill(i)) as Uint8Array);
    const pairs = [
      [keys[0]!, keys[1]!],
      [keys[1]!, keys[0]!],
      [keys[0]!, keys[2]!],
    ];
    // Few distinct scripts, each coming back, some differing in one byte only.
    const base = new Uint8Array(300).fill(5);
    const scripts = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9].map((i) => {
      const s = base.slice();
      s[i * 13] = i;
      return s;
    });
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat(2), fc.nat(9), uint(64)), { minLength: 1, maxLength: 30 }),
        (calls) => {
          for (const [p, s, version] of calls) {
            const pair = pairs[p]!;
            const script = scripts[s]!;
            const expected = concat(
              blake160(aggregateXOnly(pair)),
              le64(delaySince(0x10n)),
              be64(version),
              blake160(script),
              new Uint8Array([0]),
            );
            expect(commitmentLockArgs(pair, 0x10n, version, script)).toEqual(expected);
          }
        },
      ),
      { numRuns: 100 },
    );
  });
});
