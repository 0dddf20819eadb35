/** Channel message codecs: the reference's sizes, round trips, and hostile bytes. */
import { ccc } from '@ckb-ccc/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  CHANNEL_CODECS,
  type ChannelMessage,
  decodeChannelBody,
  encodeChannelBody,
  fromFiberMessage,
  toFiberMessage,
} from '../../src/channel/wire.ts';
import { bytesToHex } from '../../src/codec/hex.ts';
import { sha256 } from '../../src/crypto/hash.ts';
import { P2pError } from '../../src/p2p/errors.ts';
import { decodeFiberMessage, encodeFiberMessage } from '../../src/p2p/fiber-message.ts';

const b = (n: number, fill = 1) => new Uint8Array(n).fill(fill);
const secp = ccc.Script.from({
  codeHash: `0x${'9b'.repeat(32)}`,
  hashType: 'type',
  args: `0x${'aa'.repeat(20)}`,
});
const id = b(32, 7);

const SAMPLES: ChannelMessage[] = [
  {
    type: 'OpenChannel',
    value: {
      chainHash: b(32),
      channelId: id,
      fundingUdtTypeScript: null,
      fundingAmount: 438n * 100_000_000n,
      shutdownScript: secp,
      reservedCkbAmount: 62n * 100_000_000n,
      fundingFeeRate: 1000n,
      commitmentFeeRate: 1000n,
      maxTlcValueInFlight: (1n << 128n) - 1n,
      maxTlcNumberInFlight: 125n,
      commitmentDelayEpoch: 0x0000010000000001n,
      fundingPubkey: b(33, 2),
      tlcBasepoint: b(33, 3),
      firstPerCommitmentPoint: b(33, 2),
      secondPerCommitmentPoint: b(33, 3),
      channelAnnouncementNonce: null,
      nextCommitmentNonce: b(66, 2),
      nextRevocationNonce: b(66, 3),
      channelFlags: 0,
    },
  },
  {
    type: 'AcceptChannel',
    value: {
      channelId: id,
      fundingAmount: 188n,
      shutdownScript: secp,
      reservedCkbAmount: 62n,
      maxTlcValueInFlight: 5n,
      maxTlcNumberInFlight: 125n,
      fundingPubkey: b(33, 2),
      tlcBasepoint: b(33, 3),
      firstPerCommitmentPoint: b(33, 2),
      secondPerCommitmentPoint: b(33, 3),
      channelAnnouncementNonce: null,
      nextCommitmentNonce: b(66, 2),
      nextRevocationNonce: b(66, 3),
    },
  },
  { type: 'Shutdown', value: { channelId: id, feeRate: 1000n, closeScript: secp } },
  {
    type: 'ReestablishChannel',
    value: { channelId: id, localCommitmentNumber: 2n, remoteCommitmentNumber: 3n },
  },
  {
    type: 'AddTlc',
    value: {
      channelId: id,
      tlcId: 0n,
      amount: 1000n,
      paymentHash: b(32, 9),
      expiry: 1767225600000n,
      hashAlgorithm: 1,
      onionPacket: new Uint8Array(0),
    },
  },
  { type: 'RemoveTlc', value: { channelId: id, tlcId: 4n, reason: { fulfill: b(32, 5) } } },
  { type: 'RemoveTlc', value: { channelId: id, tlcId: 4n, reason: { fail: b(10, 5) } } },
  {
    type: 'AnnouncementSignatures',
    value: { channelId: id, channelOutpoint: b(36), nodeSignature: b(64), partialSignature: b(32) },
  },
  { type: 'TxComplete', value: { channelId: id, nextCommitmentNonce: b(66, 4) } },
  {
    type: 'CommitmentSigned',
    value: { channelId: id, fundingTxPartialSignature: b(32, 4), nextCommitmentNonce: b(66, 4) },
  },
  { type: 'ChannelReady', value: { channelId: id } },
  {
    type: 'UpdateTlcInfo',
    value: {
      channelId: id,
      timestamp: 1n,
      channelFlags: 1,
      tlcExpiryDelta: 2n,
      tlcMinimumValue: 3n,
      tlcFeeProportionalMillionths: 1000n,
    },
  },
  {
    type: 'RevokeAndAck',
    value: {
      channelId: id,
      revocationPartialSignature: b(32),
      nextPerCommitmentPoint: b(33, 2),
      nextRevocationNonce: b(66),
    },
  },
  { type: 'ClosingSigned', value: { channelId: id, partialSignature: b(32) } },
  { type: 'TxSignatures', value: { channelId: id, witnesses: [b(85), new Uint8Array(0)] } },
  { type: 'TxAbort', value: { channelId: id, message: new TextEncoder().encode('no') } },
  { type: 'TxInitRBF', value: { channelId: id, feeRate: 1000n } },
  { type: 'TxAckRBF', value: { channelId: id } },
  {
    type: 'TxUpdate',
    value: {
      channelId: id,
      tx: ccc.Transaction.from({
        version: 0,
        inputs: [{ previousOutput: { txHash: `0x${'11'.repeat(32)}`, index: 1 }, since: 0n }],
        outputs: [{ capacity: 500n, lock: secp }],
        outputsData: ['0x'],
        witnesses: ['0x'],
      }),
    },
  },
];

describe('channel message codecs', () => {
  it('have the sizes the reference computes (§1)', () => {
    const size = (i: number) => encodeChannelBody(SAMPLES[i]!).length;
    expect(size(0)).toBe(554); // OpenChannel, private, secp shutdown script
    expect(size(1)).toBe(473); // AcceptChannel
    expect(size(2)).toBe(129); // Shutdown
    expect(size(3)).toBe(64); // ReestablishChannel
    expect(size(4)).toBe(133); // AddTlc, empty onion
    expect(size(5)).toBe(92); // RemoveTlc fulfill
    expect(size(7)).toBe(184); // AnnouncementSignatures
    expect(size(8)).toBe(98);
    expect(size(9)).toBe(130);
    expect(size(11)).toBe(84);
    expect(size(12)).toBe(163);
    expect(size(13)).toBe(64);
  });

  it('keep the bytes of the hand-written codecs they replaced (sha256 prefix of each sample)', () => {
    // Recorded from the encoders before the move to declarative schemas (codec/schema.ts).
    const pinned = [
      '5fdb4a55954480ef',
      'ecd026c55ba3e1f3',
      '70f5815deba38135',
      'c56bdd81308b88a8',
      '6350cc0625950360',
      '5b517872eab020d8',
      'd55a67484043ae02',
      '1a83e6c2bb064492',
      'b8d7d623c537635c',
      '37384890d0678265',
      '4bb06f8e4e3a7715',
      '89b5ca423395e662',
      'edf2b8bb02cca5c6',
      '07c5ee68836d5b59',
      'f7057648f9fc4c31',
      '2d6dd7b65b5b26a4',
      '3249e15151a337dd',
      'fe7e23237ebfb407',
      'e3d6ce4f46661af7',
    ];
    expect(SAMPLES.map((m) => bytesToHex(sha256(encodeChannelBody(m))).slice(2, 18))).toEqual(pinned);
  });

  it('round-trip every kind through the FiberMessage union (wire ids as in fiber.mol)', () => {
    for (const m of SAMPLES) {
      const wire = encodeFiberMessage(toFiberMessage(m));
      const back = fromFiberMessage(decodeFiberMessage(wire));
      expect(back?.type).toBe(m.type);
      expect(encodeChannelBody(back!)).toEqual(encodeChannelBody(m));
    }
    expect(encodeFiberMessage(toFiberMessage(SAMPLES[0]!)).subarray(0, 4)).toEqual(
      new Uint8Array([1, 0, 0, 0]),
    );
    expect(encodeFiberMessage(toFiberMessage(SAMPLES[3]!)).subarray(0, 4)).toEqual(
      new Uint8Array([17, 0, 0, 0]),
    );
  });

  it('refuse truncated, extended and random bodies with P2pError only', () => {
    for (const m of SAMPLES) {
      const body = encodeChannelBody(m);
      for (const cut of [0, 1, 4, body.length - 1]) {
        expect(() => decodeChannelBody(m.type, body.subarray(0, cut))).toThrow(P2pError);
      }
    }
    const kinds = Object.keys(CHANNEL_CODECS) as (keyof typeof CHANNEL_CODECS)[];
    fc.assert(
      fc.property(fc.constantFrom(...kinds), fc.uint8Array({ maxLength: 700 }), (k, bytes) => {
        try {
          decodeChannelBody(k, bytes);
        } catch (e) {
          expect(e).toBeInstanceOf(P2pError);
        }
      }),
      { numRuns: 3000 },
    );
  });

  it('refuse an encoding with a wrong-sized key or an unknown RemoveTlc reason', () => {
    const bad = {
      ...SAMPLES[0]!,
      value: { ...(SAMPLES[0]!.value as object), fundingPubkey: b(32) },
    } as ChannelMessage;
    expect(() => encodeChannelBody(bad)).toThrow(P2pError);
    const body = encodeChannelBody(SAMPLES[5]!);
    const mutated = body.slice();
    // The union id sits right after the table header and the two fixed fields.
    mutated[16 + 32 + 8] = 7;
    expect(() => decodeChannelBody('RemoveTlc', mutated)).toThrow(/unknown id/);
  });
});
