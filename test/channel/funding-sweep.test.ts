/**
 * The funding monitor's sweep (`channel/funding-sweep.ts`) and the channel rows' parser: a node
 * with thousands of channels checks them in turn, a few per tick, and reads them all at start.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FundingSweep } from '../../src/channel/funding-sweep.ts';
import { type Channel, deserializeChannel, serializeChannelLean } from '../../src/channel/state.ts';

describe('the funding sweep', () => {
  it('checks every channel on every tick while they are few', () => {
    const sweep = new FundingSweep(4);
    const open = ['a', 'b', 'c'];
    for (let t = 0; t < 3; t++) expect(sweep.take(open)).toEqual(open);
  });

  it('checks many channels in turn, each once per round of ticks, as the list changes', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 20 }), fc.integer({ min: 1, max: 200 }), (perTick, n) => {
        const sweep = new FundingSweep(perTick);
        const open = Array.from({ length: n }, (_, i) => i);
        const ticks = Math.ceil(n / perTick);
        const seen = new Map<number, number>();
        for (let t = 0; t < ticks; t++) {
          const batch = sweep.take(open);
          expect(batch.length).toBe(Math.min(perTick, n));
          for (const c of batch) seen.set(c, (seen.get(c) ?? 0) + 1);
        }
        // Every channel checked in one round of ticks (the last batch may wrap round to the first).
        expect(seen.size).toBe(n);
        // A channel closed meanwhile: the sweep goes on over what is left.
        const fewer = open.slice(1);
        if (fewer.length) expect(sweep.take(fewer).length).toBe(Math.min(perTick, fewer.length));
      }),
    );
  });
});

describe('a channel row read back', () => {
  const bigintish = fc.oneof(
    fc.bigInt({ min: 0n, max: 1n << 130n }),
    fc.record({ $big: fc.oneof(fc.bigInt({ min: 0n }).map(String), fc.string()) }, { noNullPrototype: true }),
    fc.record({ $big: fc.string(), other: fc.integer() }, { noNullPrototype: true }),
  );
  const value = fc.letrec((tie) => ({
    node: fc.oneof(
      { depthSize: 'small' },
      fc.jsonValue({ maxDepth: 1 }),
      bigintish,
      fc.array(tie('node'), { maxLength: 4 }),
      fc.dictionary(fc.string(), tie('node'), { maxKeys: 4, noNullPrototype: true }),
    ),
  })).node;

  it('deserializeChannel reads what a JSON reviver would (the slower way it replaced)', () => {
    const reviverParse = (text: string) =>
      JSON.parse(text, (_k, v) =>
        v && typeof v === 'object' && typeof v.$big === 'string' && Object.keys(v).length === 1
          ? BigInt(v.$big)
          : v,
      );
    fc.assert(
      fc.property(value, (v) => {
        const text = serializeChannelLean(v as unknown as Channel);
        // The same value, or the same refusal (a `$big` that is no number).
        const outcome = (parse: (t: string) => unknown) => {
          try {
            return { value: parse(text) };
          } catch (e) {
            return { error: (e as Error).name };
          }
        };
        expect(outcome(deserializeChannel)).toEqual(outcome(reviverParse));
      }),
      { numRuns: 1_000 },
    );
  });
});
