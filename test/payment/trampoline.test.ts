import { secp256k1 } from '@noble/curves/secp256k1.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  buildTrampolineOnion,
  decodeTrampolinePayload,
  encodeTrampolinePayload,
  OnionError,
  peelTrampolineOnion,
  TRAMPOLINE_ONION_PACKET_SIZE,
  type TrampolineHopPayload,
} from '../../src/payment/onion/index.ts';

const fill = (v: number, n = 32) => new Uint8Array(n).fill(v);
const keys = [0x51, 0x52, 0x53].map((v) => ({ sk: fill(v), pk: secp256k1.getPublicKey(fill(v), true) }));
const HASH = fill(0x77);

const forward = (i: number): TrampolineHopPayload => ({
  type: 'Forward',
  nextNodeId: keys[i + 1]!.pk,
  amountToForward: 1_000_000n + BigInt(i),
  hashAlgorithm: 1,
  buildMaxFeeAmount: 5000n,
  tlcExpiryDelta: 86_400_000n + 14_400_000n,
  tlcExpiryLimit: 1_209_600_000n,
  maxParts: i === 0 ? 4n : null,
});
const final: TrampolineHopPayload = {
  type: 'Final',
  finalAmount: 1_000_000n,
  finalTlcExpiryDelta: 86_400_000n,
  paymentPreimage: fill(9),
  customRecords: new Map([[7, Uint8Array.of(1, 2, 3)]]),
};

describe('trampoline inner onion', () => {
  it('payloads round-trip through the molecule union', () => {
    for (const p of [forward(0), forward(1), final])
      expect(decodeTrampolinePayload(encodeTrampolinePayload(p))).toEqual(p);
  });

  it('1366-byte packets peel hop by hop to the final payload', () => {
    const { packet, sharedSecrets } = buildTrampolineOnion(
      keys.map((k) => k.pk),
      [forward(0), forward(1), final],
      HASH,
    );
    expect(packet.length).toBe(TRAMPOLINE_ONION_PACKET_SIZE);
    expect(packet.length).toBe(1366);
    let p: Uint8Array | null = packet;
    const seen: TrampolineHopPayload[] = [];
    for (const [i, k] of keys.entries()) {
      const peeled = peelTrampolineOnion(p!, k.sk, HASH);
      expect(peeled.sharedSecret).toEqual(sharedSecrets[i]);
      seen.push(peeled.payload);
      p = peeled.next;
    }
    expect(p).toBeNull();
    expect(seen).toEqual([forward(0), forward(1), final]);
  });

  it('refuses version 0, a wrong hash, and random bytes (OnionError only)', () => {
    const { packet } = buildTrampolineOnion([keys[0]!.pk], [final], HASH);
    const v0 = packet.slice();
    v0[0] = 0;
    expect(() => peelTrampolineOnion(v0, keys[0]!.sk, HASH)).toThrow(OnionError);
    expect(() => peelTrampolineOnion(packet, keys[0]!.sk, fill(1))).toThrow(OnionError);
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 1500 }), (b) => {
        expect(() => peelTrampolineOnion(b, keys[0]!.sk, HASH)).toThrow(OnionError);
      }),
      { numRuns: 50 },
    );
  });
});
