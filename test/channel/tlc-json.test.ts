/**
 * A TLC row's JSON (`serializeTlcLean`) is written by hand for speed: it must be the very text
 * `JSON.stringify` with the lean replacer gives, for every TLC and for any object it is handed.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { deserializeTlc, leanReplacer, serializeTlcLean, type Tlc } from '../../src/channel/state.ts';

const hex = (n: number) =>
  fc.uint8Array({ minLength: n, maxLength: n }).map((b) => `0x${Buffer.from(b).toString('hex')}`);
const u64 = fc.bigInt({ min: 0n, max: (1n << 64n) - 1n });

const tlc: fc.Arbitrary<Tlc> = fc.record(
  {
    id: u64,
    offered: fc.boolean(),
    amount: fc.bigInt({ min: 0n, max: (1n << 128n) - 1n }),
    paymentHash: hex(32),
    expiry: u64,
    hashAlgorithm: fc.constantFrom(0, 1),
    onion: fc.uint8Array({ maxLength: 64 }),
    added: fc.constantFrom('announced' as const, 'committed' as const),
    createdAt: fc.record({ local: u64, remote: u64 }),
    localKey: hex(33),
    remoteKey: hex(33),
    removal: fc.record(
      {
        preimage: hex(32),
        error: fc.oneof(hex(0), hex(40)),
        state: fc.constantFrom('announced' as const, 'committed' as const),
      },
      { requiredKeys: ['state'] },
    ),
    keyTag: hex(32),
  },
  {
    requiredKeys: ['id', 'offered', 'amount', 'paymentHash', 'expiry', 'hashAlgorithm', 'onion', 'added'],
  },
);

/** Anything at all under a TLC's keys and others: the general way must be taken where needed. */
const odd = fc.dictionary(
  fc.oneof(fc.constantFrom('id', 'added', 'removal', 'onion', 'createdAt'), fc.string()),
  fc.oneof(
    fc.string(),
    fc.bigInt(),
    fc.double(),
    fc.boolean(),
    fc.constant(null),
    fc.constant(undefined),
    fc.uint8Array({ maxLength: 4 }),
    fc.array(fc.oneof(fc.integer(), fc.string()), { maxLength: 3 }),
    fc.dictionary(
      fc.string(),
      fc.oneof(fc.string(), fc.bigInt(), fc.double(), fc.dictionary(fc.string(), fc.string())),
    ),
  ),
);

describe('a TLC row as JSON', () => {
  it('is the text JSON.stringify gives, and reads back as the TLC without its onion', () => {
    fc.assert(
      fc.property(tlc, (t) => {
        const text = serializeTlcLean(t);
        expect(text).toBe(JSON.stringify(t, leanReplacer));
        expect(deserializeTlc(text)).toEqual({ ...t, onion: new Uint8Array(0) });
      }),
      { numRuns: 500 },
    );
  });

  it('keeps the order of the fields, undefined ones left out', () => {
    const t = { added: 'committed', removal: undefined, id: 7n, onion: new Uint8Array(3) } as unknown as Tlc;
    expect(serializeTlcLean(t)).toBe('{"added":"committed","id":{"$big":"7"},"onion":"0x"}');
  });

  it('gives the general text for values it does not write itself', () => {
    fc.assert(
      fc.property(odd, (o) => {
        expect(serializeTlcLean(o as unknown as Tlc)).toBe(JSON.stringify(o, leanReplacer));
      }),
      { numRuns: 1000 },
    );
  });
});
