import { secp256k1 } from '@noble/curves/secp256k1.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { describe, expect, it } from 'vitest';
import {
  createErrorPacket,
  deriveHopsKeys,
  deriveKey,
  generateFiller,
  keystream,
  obfuscateErrorPacket,
  parseErrorPacket,
  peelPacket,
  SphinxError,
  sealPacket,
} from '../../src/payment/onion/sphinx.ts';
import { ERROR_AFTER_HOP0, ERROR_BY_HOP4, PACKET_1366 } from './sphinx-vectors.ts';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const h = (s: string) => new Uint8Array(Buffer.from(s, 'hex'));
const fill = (v: number, n = 32) => new Uint8Array(n).fill(v);

const SESSION = fill(0x41);
const ASSOC = fill(0x42);
const L = 1300;
const HOP_SECRETS = [0x41, 0x42, 0x43, 0x44, 0x45].map((v) => fill(v));
const HOPS = [
  '02eec7245d6b7d2ccb30380bfbe2a3648cd7a942653f5aa340edcea1f283686619',
  '0324653eac434488002cc06bbfb7f10fe18991e35f9fe4302dbea6d2353dc0ab1c',
  '027f31ebc5462c1fdce1b737ecff52d37d75dea43ce11c74d25aa297165faa2007',
  '032c0b7cf95324a07d05398b240174dc0c2be444d96b159aa6c7f7b1e668680991',
  '02edabbd16b41c8371b92ef2f04c1185b4f03b6dcd52ba9b78d9d7c89c8f221145',
].map(h);
const DATA = [
  '1202023a98040205dc06080000000000000001',
  '52020236b00402057806080000000000000002fd02013c0102030405060708090a0b0c0d0e0f0102030405060708090a0b0c0d0e0f0102030405060708090a0b0c0d0e0f0102030405060708090a0b0c0d0e0f',
  '12020230d4040204e206080000000000000003',
  '1202022710040203e806080000000000000004',
  'fd011002022710040203e8082224a33562c54507a9334e79f0dc4f17d407e6d7c61f0e2f3d0d38599502f617042710fd012de0' +
    '2a'.repeat(224),
].map(h);
const EXPECTED = [
  {
    alpha: '02eec7245d6b7d2ccb30380bfbe2a3648cd7a942653f5aa340edcea1f283686619',
    s: '53eb63ea8a3fec3b3cd433b85cd62a4b145e1dda09391b348c4e1cd36a03ea66',
    rho: 'ce496ec94def95aadd4bec15cdb41a740c9f2b62347c4917325fcc6fb0453986',
    mu: 'b57061dc6d0a2b9f261ac410c8b26d64ac5506cbba30267a649c28c179400eba',
  },
  {
    alpha: '028f9438bfbf7feac2e108d677e3a82da596be706cc1cf342b75c7b7e22bf4e6e2',
    s: 'a6519e98832a0b179f62123b3567c106db99ee37bef036e783263602f3488fae',
    rho: '450ffcabc6449094918ebe13d4f03e433d20a3d28a768203337bc40b6e4b2c59',
    mu: '05ed2b4a3fb023c2ff5dd6ed4b9b6ea7383f5cfe9d59c11d121ec2c81ca2eea9',
  },
  {
    alpha: '03bfd8225241ea71cd0843db7709f4c222f62ff2d4516fd38b39914ab6b83e0da0',
    s: '3a6b412548762f0dbccce5c7ae7bb8147d1caf9b5471c34120b30bc9c04891cc',
    rho: '11bf5c4f960239cb37833936aa3d02cea82c0f39fd35f566109c41f9eac8deea',
    mu: 'caafe2820fa00eb2eeb78695ae452eba38f5a53ed6d53518c5c6edf76f3f5b78',
  },
  {
    alpha: '031dde6926381289671300239ea8e57ffaf9bebd05b9a5b95beaf07af05cd43595',
    s: '21e13c2d7cfe7e18836df50872466117a295783ab8aab0e7ecc8c725503ad02d',
    rho: 'cbe784ab745c13ff5cffc2fbe3e84424aa0fd669b8ead4ee562901a4a4e89e9e',
    mu: '5052aa1b3d9f0655a0932e50d42f0c9ba0705142c25d225515c45f47c0036ee9',
  },
  {
    alpha: '03a214ebd875aab6ddfd77f22c5e7311d7f77f17a169e599f157bbcdae8bf071f4',
    s: 'b5756b9b542727dbafc6765a49488b023a725d631af688fc031217e90770c328',
    rho: '034e18b8cc718e8af6339106e706c52d8df89e2b1f7e9142d996acf88df8799b',
    mu: '8e45e5c61c2b24cb6382444db6698727afb063adecd72aada233d4bf273d975a',
  },
];
const FILLER =
  '51c30cc8f20da0153ca3839b850bcbc8fefc7fd84802f3e78cb35a660e747b57aa5b0de555cbcf1e6f044a718cc34219b96597f3684eee7a0232e1754f638006cb15a14788217abdf1bdd67910dc1ca74a05dcce8b5ad841b0f939fca8935f6a3ff660e0efb409f1a24ce4aa16fc7dc074cd84422c10cc4dd4fc150dd6d1e4f50b36ce10fef29248dd0cec85c72eb3e4b2f4a7c03b5c9e0c9dd12976553ede3d0e295f842187b33ff743e6d685075e98e1bcab8a46bff0102ca8b2098ae91798d370b01ca7076d3d626952a03663fe8dc700d1358263b73ba30e36731a0b72092f8d5bc8cd346762e93b2bf203d00264e4bc136fc142de8f7b69154deb05854ea88e2d7506222c95ba1aab06';

/** BOLT 4's hop length: a BigSize length prefix plus the TLV stream it announces. */
function boltHopLength(d: Uint8Array): number | null {
  const first = d[0]!;
  if (first < 0xfd) return 1 + first;
  if (first === 0xfd) return 3 + ((d[1]! << 8) | d[2]!);
  return null;
}

describe('fiber-sphinx official vectors', () => {
  it('derives every hop key', () => {
    const keys = deriveHopsKeys(SESSION, HOPS);
    keys.forEach((k, i) => {
      expect(hex(k.ephemeralPublicKey)).toBe(EXPECTED[i]!.alpha);
      expect(hex(k.sharedSecret)).toBe(EXPECTED[i]!.s);
      expect(hex(k.rho)).toBe(EXPECTED[i]!.rho);
      expect(hex(k.mu)).toBe(EXPECTED[i]!.mu);
    });
  });

  it('derives the pad key, padding and filler', () => {
    const pad = deriveKey('pad', SESSION);
    expect(hex(pad)).toBe('70fa47d28edc4faf3e733ae0f4d2a12b8c5f09cbd74408eb7bc6ba2f1ebf88a2');
    const padding = keystream(pad, L);
    expect(hex(padding.subarray(0, 32))).toBe(
      '77b5a170c57c6ff643fd6f46f5537c2fec4c5258f89fafbd722f9041f1cead9b',
    );
    expect(hex(padding.subarray(L - 16))).toBe('825ebea6b68b0d8fca71277cdda7af17');
    expect(hex(sha256(padding))).toBe('182aac326004a7a2436b984dbca499d953008b23d8ccd83052a654115e6afb12');
    expect(hex(generateFiller(deriveHopsKeys(SESSION, HOPS), DATA, L))).toBe(FILLER);
  });

  it('creates the 1366-byte packet byte for byte', () => {
    const { packet } = sealPacket({
      sessionKey: SESSION,
      hopPubkeys: HOPS,
      hopData: DATA,
      assocData: ASSOC,
      dataLen: L,
    });
    expect(packet.length).toBe(1366);
    expect(hex(packet)).toBe(PACKET_1366);
  });

  it('each hop peels its own data and passes on the rest; the last sees a zero HMAC', () => {
    let packet: Uint8Array | null = h(PACKET_1366);
    for (let i = 0; i < HOPS.length; i++) {
      expect(secp256k1.getPublicKey(HOP_SECRETS[i]!, true)).toEqual(HOPS[i]);
      const peeled = peelPacket(packet!, HOP_SECRETS[i]!, ASSOC, boltHopLength);
      expect(hex(peeled.hopData)).toBe(hex(DATA[i]!));
      expect(hex(peeled.sharedSecret)).toBe(EXPECTED[i]!.s);
      packet = peeled.next;
      if (i < HOPS.length - 1) expect(hex(packet!.subarray(1, 34))).toBe(EXPECTED[i + 1]!.alpha);
    }
    expect(packet).toBeNull();
  });

  it('rejects a packet with other associated data, a flipped bit or the wrong key', () => {
    const packet = h(PACKET_1366);
    expect(() => peelPacket(packet, HOP_SECRETS[0]!, fill(0x43), boltHopLength)).toThrow(SphinxError);
    const flipped = packet.slice();
    flipped[500]! ^= 1;
    expect(() => peelPacket(flipped, HOP_SECRETS[0]!, ASSOC, boltHopLength)).toThrow(/HMAC/);
    expect(() => peelPacket(packet, HOP_SECRETS[1]!, ASSOC, boltHopLength)).toThrow(/HMAC/);
    const badKey = packet.slice();
    badKey[1] = 0x05;
    expect(() => peelPacket(badKey, HOP_SECRETS[0]!, ASSOC, boltHopLength)).toThrow(/public key/);
    expect(() => peelPacket(packet.subarray(0, 65), HOP_SECRETS[0]!, ASSOC, boltHopLength)).toThrow(/bytes/);
  });

  it('refuses hop data larger than the routing info', () => {
    expect(() =>
      sealPacket({
        sessionKey: SESSION,
        hopPubkeys: HOPS,
        hopData: DATA.map(() => fill(1, 300)),
        dataLen: L,
      }),
    ).toThrow(/more than 1300/);
  });

  it('creates, relays and decodes the error packets', () => {
    const payload = new Uint8Array(260);
    payload.set(h('0002200200fe'), 0);
    const secrets = EXPECTED.map((e) => h(e.s));
    let packet = createErrorPacket(secrets[4]!, payload);
    expect(hex(packet)).toBe(ERROR_BY_HOP4);
    const prefixes = [
      'c49a1ce81680f78f5f2000cda36268de',
      'a5d3e8634cfe78b2307d87c6d90be6fe',
      'aac3200c4968f56b21f53e5e374e3a23',
    ];
    for (let i = 3; i >= 0; i--) {
      packet = obfuscateErrorPacket(secrets[i]!, packet);
      if (i >= 1) expect(hex(packet.subarray(0, 16))).toBe(prefixes[3 - i]);
    }
    expect(hex(packet)).toBe(ERROR_AFTER_HOP0);
    const parsed = parseErrorPacket(secrets, packet, (p) => (p[2] === 0x20 && p[3] === 0x02 ? 0x2002 : null));
    expect(parsed?.index).toBe(4);
    expect(parsed?.value).toBe(0x2002);
    expect(parseErrorPacket(secrets.slice(0, 4), packet, () => 1)).toBeNull();
  });
});
