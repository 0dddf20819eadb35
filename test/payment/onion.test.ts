import { secp256k1 } from '@noble/curves/secp256k1.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { describe, expect, it } from 'vitest';
import { ckbHash } from '../../src/crypto/hash.ts';
import {
  buildOnion,
  createErrorPacket,
  decodeErrorPacket,
  decodeHopData,
  decodeTlcErr,
  encodeHopData,
  encodeMppRecord,
  encodeTlcErr,
  MPP_RECORD_KEY,
  OnionError,
  PAYMENT_ONION_PACKET_SIZE,
  peelOnion,
  relayErrorPacket,
  type TlcErr,
} from '../../src/payment/onion/index.ts';
import { hop } from './hop-data-fixture.ts';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const h = (s: string) => new Uint8Array(Buffer.from(s, 'hex'));
const fill = (v: number, n = 32) => new Uint8Array(n).fill(v);

const SK_B = fill(0x42);
const SK_C = fill(0x43);
const B = secp256k1.getPublicKey(SK_B, true);
const C = secp256k1.getPublicKey(SK_C, true);
const B_PAYLOAD = hop({ fundingTxHash: fill(0xaa), nextHop: C });
const C_PAYLOAD = hop({});
/** The sender's own instruction (hops[0]): not encrypted, it names B as the next hop. */
const SENDER = hop({ fundingTxHash: fill(0xbb), nextHop: B });

describe('PaymentHopData (reference vectors §1.7 b, c)', () => {
  it('encodes the fixed 159-byte vector with its ckb hashes', () => {
    // The reference document's hex has one 0x00 too many (160 bytes for a 0x9f-byte table); the
    // ckb hashes below, from the reference's own test, confirm the 159-byte form.
    const v = encodeHopData(
      hop({
        amount: 1000n,
        expiry: 1000n,
        paymentPreimage: fill(1),
        hashAlgorithm: 1,
        customRecords: new Map([[1, h('0203')]]),
      }),
    );
    expect(hex(v)).toBe(
      '9f00000020000000300000003800000058000000590000007900000079000000e8030000000000000000000000000000e803000000000000010101010101010101010101010101010101010101010101010101010101010101000000000000000000000000000000000000000000000000000000000000000026000000080000001e00000008000000160000000c0000001000000001000000020000000203',
    );
    expect(hex(ckbHash(v))).toBe('05e50a25b23489e96a8c25a4d3eab07bf9c71c651046224b3cbf3fe3d5c876d7');
    const v0 = new Uint8Array(8 + v.length);
    v0[7] = v.length;
    v0.set(v, 8);
    expect(hex(ckbHash(v0))).toBe('1ea2a67b30c7d2cedab21c6e5f4a3b860fc8b1ccc525f42dd1bdd4a7d6dfe489');
    expect(decodeHopData(v).customRecords?.get(1)).toEqual(h('0203'));
  });

  it('encodes the forwarding (122 B) and final (89 B) payloads; MPP final is 173 B', () => {
    expect(hex(encodeHopData(B_PAYLOAD))).toBe(
      '7a0000002000000030000000380000003800000039000000590000007a000000e8030000000000000000000000000000e6cf568d9401000000aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa027f31ebc5462c1fdce1b737ecff52d37d75dea43ce11c74d25aa297165faa2007',
    );
    expect(hex(encodeHopData(C_PAYLOAD))).toBe(
      '5900000020000000300000003800000038000000390000005900000059000000e8030000000000000000000000000000e6cf568d94010000000000000000000000000000000000000000000000000000000000000000000000',
    );
    const mpp = hop({ customRecords: new Map([[MPP_RECORD_KEY, encodeMppRecord(fill(7), 5000n)]]) });
    expect(encodeHopData(mpp).length).toBe(173);
  });

  it('decodes leniently: unknown hash algorithm → CkbHash, invalid next hop → none', () => {
    const bytes = encodeHopData(hop({ hashAlgorithm: 1, nextHop: fill(0x05, 33) }));
    bytes[4 * 8 + 16 + 8] = 7; // hash_algorithm byte
    const d = decodeHopData(bytes);
    expect(d.hashAlgorithm).toBe(0);
    expect(d.nextHop).toBeNull();
  });
});

describe('payment onion (derived vectors §1.7 c)', () => {
  const paymentHash = fill(0x42);
  const built = buildOnion([SENDER, B_PAYLOAD, C_PAYLOAD], paymentHash, { sessionKey: fill(0x41) });

  it('builds the packet for B byte for byte', () => {
    const p = built.packet;
    expect(p.length).toBe(PAYMENT_ONION_PACKET_SIZE);
    expect(p.length).toBe(6566);
    expect(hex(p.subarray(0, 34))).toBe(
      '0102eec7245d6b7d2ccb30380bfbe2a3648cd7a942653f5aa340edcea1f283686619',
    );
    expect(hex(p.subarray(34, 66))).toBe('6344e6916fc37ff1e6af933e053ef3f2e2b9a0005b14c261b7797d138621a5c4');
    expect(hex(p.subarray(p.length - 32))).toBe(
      '26137ed79e5ee3501f347e32d79f6ac7d9ad7ffd4e88d3b2280b8abae35599cc',
    );
    expect(hex(sha256(p))).toBe('48762c882c8c840803670035d590f94edfcaf0f88d7371ae0fa08cf7304307a9');
    expect(built.path).toEqual([B, C]);
  });

  it('B peels its payload and the packet for C; C peels the final payload', () => {
    const atB = peelOnion(built.packet, SK_B, paymentHash);
    expect(atB.current).toEqual(B_PAYLOAD);
    const forC = atB.next!;
    expect(hex(forC.subarray(0, 34))).toBe(
      '0103b4cd0c5b3fc8d8ebaa75fa95fd3c9014fe66d311efe569fe27ee44c2443926c7',
    );
    expect(hex(forC.subarray(forC.length - 32))).toBe(
      '2e336c2c0a921ebc897ff0cb31243fc9cd588a702e6d9a8f0d94f91fb015e982',
    );
    expect(hex(sha256(forC))).toBe('4ddb36c1f5f5bf2f12a724447c0ef1231acf9d27bd01128aacc189defc45ac28');
    const atC = peelOnion(forC, SK_C, paymentHash);
    expect(atC.current).toEqual(C_PAYLOAD);
    expect(atC.next).toBeNull();
    expect(atB.sharedSecret).toEqual(built.sharedSecrets[0]);
    expect(atC.sharedSecret).toEqual(built.sharedSecrets[1]);
  });

  it('version 0 packets (u64 BE length prefix) round-trip; unknown versions are refused', () => {
    const v0 = buildOnion([SENDER, B_PAYLOAD, C_PAYLOAD], paymentHash, { version: 0 });
    expect(v0.packet[0]).toBe(0);
    const atB = peelOnion(v0.packet, SK_B, paymentHash);
    expect(atB.current).toEqual(B_PAYLOAD);
    expect(peelOnion(atB.next!, SK_C, paymentHash).current).toEqual(C_PAYLOAD);
    const v2 = built.packet.slice();
    v2[0] = 2;
    expect(() => peelOnion(v2, SK_B, paymentHash)).toThrow(OnionError);
  });

  it('the version byte is not authenticated (a v1 packet relabelled v0 fails on its payload length)', () => {
    const relabelled = built.packet.slice();
    relabelled[0] = 0;
    expect(() => peelOnion(relabelled, SK_B, paymentHash)).toThrow(OnionError);
  });

  it('42 receiving hops fit, 43 do not', () => {
    const keys = Array.from({ length: 43 }, (_, i) => secp256k1.getPublicKey(fill(i + 1), true));
    const make = (n: number) => [
      hop({ nextHop: keys[0]! }),
      ...keys
        .slice(0, n)
        .map((_, i) => (i < n - 1 ? hop({ fundingTxHash: fill(i), nextHop: keys[i + 1]! }) : hop({}))),
    ];
    expect(buildOnion(make(42), paymentHash).packet.length).toBe(6566);
    expect(() => buildOnion(make(43), paymentHash)).toThrow(OnionError);
  });

  it('refuses the wrong payment hash and the wrong node key', () => {
    expect(() => peelOnion(built.packet, SK_B, fill(0x43))).toThrow(OnionError);
    expect(() => peelOnion(built.packet, SK_C, paymentHash)).toThrow(OnionError);
  });
});

describe('TlcErr and error packets', () => {
  const channelFailed: TlcErr = {
    code: 'TemporaryChannelFailure',
    extra: {
      type: 'ChannelFailed',
      channelOutpoint: { txHash: fill(0x11), index: 0 },
      channelUpdate: null,
      nodeId: B,
    },
  };

  it('encodes the reference TlcErr values', () => {
    expect(hex(encodeTlcErr(channelFailed))).toBe(
      '670000000c0000000e000000071000000000550000001000000034000000340000001111111111111111111111111111111111111111111111111111111111111111000000000324653eac434488002cc06bbfb7f10fe18991e35f9fe4302dbea6d2353dc0ab1c',
    );
    expect(hex(encodeTlcErr({ code: 'InvalidOnionVersion', extra: null }))).toBe(
      '0e0000000c0000000e00000004c0',
    );
    expect(decodeTlcErr(encodeTlcErr(channelFailed))).toEqual(channelFailed);
  });

  it('C creates, B relays, the sender decodes at index 1 (reference packet)', () => {
    const built = buildOnion([SENDER, B_PAYLOAD, C_PAYLOAD], fill(0x42), { sessionKey: fill(0x41) });
    const atC = createErrorPacket(channelFailed, built.sharedSecrets[1]!);
    const atB = relayErrorPacket(atC, built.sharedSecrets[0]!);
    expect(hex(atB)).toBe(
      '4abab474a2afd1a6c51031c156040ac71f4c0a5f860f82f8617ec101dcacb47abbf2805934ee96e94e8d077b4611ef070081961a0db494901375482292c252ae1d1152f6c5d77b8d008f19f1d4878e155f78b09ae30ef673e66beba163bd7fd2b9c40cb8a34d6cea336d3ff1d64a28b2baf2da61138fb5fb4f6e3149b40964b03d0ebbba7f4b22',
    );
    const decoded = decodeErrorPacket(atB, built.sharedSecrets);
    expect(decoded).toEqual({ error: channelFailed, hopIndex: 1 });
  });

  it('decodes a packet held in a pooled Node Buffer (whose slice() is a view) without garbling it', () => {
    // As bytes arrive from hex text in the node: Buffer.from(hex) shares Node's pool.
    const built = buildOnion([SENDER, B_PAYLOAD, C_PAYLOAD], fill(0x42), { sessionKey: fill(0x41) });
    const atB = createErrorPacket(channelFailed, built.sharedSecrets[0]!);
    const copy = hex(atB);
    const pooled = Buffer.from(copy, 'hex');
    expect(decodeErrorPacket(pooled, built.sharedSecrets)).toEqual({ error: channelFailed, hopIndex: 0 });
    expect(pooled.toString('hex')).toBe(copy); // the input is left as it was
    const relayed = relayErrorPacket(pooled, fill(9));
    expect(pooled.toString('hex')).toBe(copy);
    expect(hex(relayed)).not.toBe(copy);
  });

  it('plaintext packets pass relays unchanged and decode without secrets', () => {
    const plain = createErrorPacket({ code: 'InvalidOnionPayload', extra: null }, null);
    expect(hex(plain)).toBe(
      '00'.repeat(32) + hex(encodeTlcErr({ code: 'InvalidOnionPayload', extra: null })),
    );
    expect(relayErrorPacket(plain, fill(9))).toEqual(plain);
    expect(decodeErrorPacket(plain, [])).toEqual({
      error: { code: 'InvalidOnionPayload', extra: null },
      hopIndex: null,
    });
  });

  it('undecodable packets give null (InvalidOnionError for the payment layer)', () => {
    const secrets = [fill(1), fill(2)];
    expect(decodeErrorPacket(new Uint8Array(10), secrets)).toBeNull();
    const p = createErrorPacket(channelFailed, secrets[1]!);
    p[40]! ^= 1;
    expect(decodeErrorPacket(relayErrorPacket(p, secrets[0]!), secrets)).toBeNull();
    // an unknown error code makes the payload undecodable
    const unknown = encodeTlcErr({ code: 'InvalidOnionVersion', extra: null });
    unknown[12] = 0x99;
    expect(() => decodeTlcErr(unknown)).toThrow(/unknown error code/);
  });
});
