/** Hostile onion input: random and mutated packets end in an OnionError (or null), never a crash. */
import { secp256k1 } from '@noble/curves/secp256k1.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MoleculeError } from '../../src/codec/molecule.ts';
import {
  buildOnion,
  createErrorPacket,
  decodeErrorPacket,
  decodeHopData,
  OnionError,
  type PaymentHopData,
  peelOnion,
} from '../../src/payment/onion/index.ts';
import { decodeTlcErr } from '../../src/payment/onion/tlc-error.ts';
import { fuzzRuns } from '../helpers/fuzz-runs.ts';

const fill = (v: number, n = 32) => new Uint8Array(n).fill(v);
const SK = fill(0x42);
const PK = secp256k1.getPublicKey(SK, true);
const HASH = fill(7);

function payload(next: Uint8Array | null): PaymentHopData {
  return {
    amount: 5n,
    expiry: 9n,
    paymentPreimage: null,
    hashAlgorithm: 0,
    fundingTxHash: fill(1),
    nextHop: next,
    customRecords: null,
  };
}

const valid = buildOnion([payload(PK), payload(null)], HASH, { sessionKey: fill(0x41) }).packet;

function peelOutcome(packet: Uint8Array): 'ok' | 'onion-error' {
  try {
    peelOnion(packet, SK, HASH);
    return 'ok';
  } catch (e) {
    if (e instanceof OnionError) return 'onion-error';
    throw e;
  }
}

describe('onion fuzz', () => {
  it('random bytes of any length are an OnionError', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 0, maxLength: 7000 }), (bytes) => {
        expect(peelOutcome(bytes)).toBe('onion-error');
      }),
      { numRuns: fuzzRuns(60) },
    );
  });

  it('any single mutation of a valid packet is rejected (the version byte is not authenticated)', () => {
    expect(peelOutcome(valid)).toBe('ok');
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: valid.length - 1 }),
        fc.integer({ min: 1, max: 255 }),
        (at, x) => {
          const m = valid.slice();
          m[at]! ^= x;
          expect(peelOutcome(m)).toBe('onion-error');
        },
      ),
      { numRuns: fuzzRuns(60) },
    );
  });

  it('truncated and extended packets are rejected', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: valid.length - 1 }), (n) => {
        expect(peelOutcome(valid.subarray(0, n))).toBe('onion-error');
      }),
      { numRuns: fuzzRuns(40) },
    );
    const longer = new Uint8Array(valid.length + 5);
    longer.set(valid);
    expect(peelOutcome(longer)).toBe('onion-error');
  });

  it('hop data and TlcErr decoders throw only MoleculeError', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 400 }), (bytes) => {
        for (const decode of [decodeHopData, decodeTlcErr]) {
          try {
            decode(bytes);
          } catch (e) {
            expect(e).toBeInstanceOf(MoleculeError);
          }
        }
      }),
      { numRuns: fuzzRuns(300) },
    );
  });

  it('error packet decoding of random or mutated packets returns a value or null, never throws', () => {
    const secrets = [fill(3), fill(4)];
    const good = createErrorPacket(
      { code: 'TemporaryNodeFailure', extra: { type: 'NodeFailed', nodeId: PK } },
      secrets[1]!,
    );
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 600 }),
        fc.integer({ min: 0, max: good.length - 1 }),
        (rand, at) => {
          decodeErrorPacket(rand, secrets);
          const m = good.slice();
          m[at]! ^= 0x5a;
          expect(decodeErrorPacket(m, secrets)).toBeNull();
        },
      ),
      { numRuns: fuzzRuns(100) },
    );
  });
});
