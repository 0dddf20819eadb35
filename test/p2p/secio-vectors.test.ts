/**
 * secio against the captured reference handshake (`docs/reference/secio-transcript.md`) and
 * the computed schedule of `tentacle-protocol.md` §10.
 */
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { describe, expect, it } from 'vitest';
import { bytesToHex, hexToBytes } from '../../src/codec/hex.ts';
import { peerIdOf } from '../../src/crypto/identity.ts';
import { memoryPair } from '../../src/p2p/conn.ts';
import {
  EXCHANGES,
  exchangeDigest,
  generateEphemeral,
  HASHES,
  ordering,
  selectBest,
  sharedSecret,
  signExchange,
  splitKeys,
  stretchKey,
  verifyExchange,
} from '../../src/p2p/secio/algorithms.ts';
import { FrameCipher } from '../../src/p2p/secio/cipher.ts';
import { secioHandshake } from '../../src/p2p/secio/handshake.ts';
import {
  decodeExchange,
  decodePropose,
  encodeExchange,
  encodePropose,
} from '../../src/p2p/secio/messages.ts';

const h = (s: string) => hexToBytes(s.replace(/\s+/g, ''));
const hex = (b: Uint8Array) => bytesToHex(b, false);
/** Strips the u32 BE length prefix of a captured frame, checking it. */
function unframe(s: string): Uint8Array {
  const b = h(s);
  const len = new DataView(b.buffer).getUint32(0, false);
  expect(len).toBe(b.length - 4);
  return b.subarray(4);
}

// Vector 1: two fiber-js 0.8.1 nodes.
const N0_SK = new Uint8Array(32).fill(1);
const N1_SK = new Uint8Array(32).fill(2);
const P_N0 =
  unframe(`0000008989000000180000002c00000059000000630000007800000010000000f069801bf4c88eed0e248939c52908aa
290000000000000021000000031b84c5567b126440995d3ed5aaba0565d71e1834604819ff9c17f5e9d5dd078f060000
005832353531391100000043484143484132305f504f4c59313330350d0000005348413235362c534841353132`);
const P_N1 =
  unframe(`0000008989000000180000002c00000059000000630000007800000010000000c737bfd59a4c1c0022e22b2fb8169ab0
290000000000000021000000024d4b6cd1361032ca9bd2aeb9d900aa4d45d9ead80ac9423374c451a7254d0766060000
005832353531391100000043484143484132305f504f4c59313330350d0000005348413235362c534841353132`);
const E_N0 =
  unframe(`0000007a7a0000000c000000300000002000000087567799cbddb3ddd735c253567b1ea61f9a691fde2503e3afab90d1
fb193b534600000030440220368d01dcf9840a3c4f7eb5482d9d5372654b1387cef52122a3f9f35bf8d5935e022044b1
277201d39a91aefb442f570fc5804a6ff3422c823cb03c3aff357ecad674`);
const E_N1 =
  unframe(`0000007b7b0000000c000000300000002000000083a507b9258d0d366b18bf803f124e36be939297d3f8803d2ef80811
38891b6f470000003045022100f25ead3fa0785a94940a6ceba404d08deddc3af19c6b8267a6f8b662ad5719a802204d
99a12947e3703866d1eb422fe08f9ab3969db5aa985a4957b3431085f5826c`);

describe('secio messages (captured fiber-js handshake)', () => {
  it('decodes both Proposes and re-encodes them byte for byte', () => {
    const p0 = decodePropose(P_N0);
    expect(hex(p0.rand)).toBe('f069801bf4c88eed0e248939c52908aa');
    expect(hex(p0.pubkey)).toBe('031b84c5567b126440995d3ed5aaba0565d71e1834604819ff9c17f5e9d5dd078f');
    expect(p0.exchanges).toBe('X25519');
    expect(p0.ciphers).toBe('CHACHA20_POLY1305');
    expect(p0.hashes).toBe('SHA256,SHA512');
    expect(hex(encodePropose(p0))).toBe(hex(P_N0));
    expect(hex(encodePropose(decodePropose(P_N1)))).toBe(hex(P_N1));
    expect(peerIdOf(p0.pubkey)).toBe('Qmecbv6CRqPqSyZUvQ8SQErHYAbq4f2Pucq8ofs2MsdZnG');
    expect(peerIdOf(decodePropose(P_N1).pubkey)).toBe('QmWzuDoiMwd6yviVHpD4JpeUBiP3ffdenERsaMAazAsUU8');
  });

  it('matches the §10 Propose encoding', () => {
    const rand = h('000102030405060708090a0b0c0d0e0f');
    const pubkey = h('02b6d4e3ab86a2ca2fad6fae0ecb2e1e559e0b911939872a90abdda6d20302be71');
    const bytes = encodePropose({
      rand,
      pubkey,
      exchanges: 'X25519',
      ciphers: 'CHACHA20_POLY1305',
      hashes: 'SHA256',
    });
    expect(hex(bytes)).toBe(
      '82000000180000002c00000059000000630000007800000010000000000102030405060708090a0b0c0d0e0f' +
        '29000000000000002100000002b6d4e3ab86a2ca2fad6fae0ecb2e1e559e0b911939872a90abdda6d20302be71' +
        '06000000583235353139' +
        '1100000043484143484132305f504f4c5931333035' +
        '06000000534841323536',
    );
  });

  it('computes the ordering both nodes computed', () => {
    const p0 = decodePropose(P_N0);
    const p1 = decodePropose(P_N1);
    const o = ordering(p0.pubkey, p0.rand, p1.pubkey, p1.rand);
    expect(hex(o.oh1)).toBe('498206efdfb018d269f3b0e9a74d073b7d1704e162a1ca1e0bb55eba42246e3f');
    expect(hex(o.oh2)).toBe('bb2dcfb6d8b1a10f20988edbcde03877883868dfc11c3bd9db319b77dd7381ac');
    expect(o.ord).toBe(-1);
    expect(ordering(p1.pubkey, p1.rand, p0.pubkey, p0.rand).ord).toBe(1);
  });

  it('verifies both Exchange signatures and reproduces them (RFC 6979, DER, low-S)', () => {
    const e0 = decodeExchange(E_N0);
    const e1 = decodeExchange(E_N1);
    expect(hex(encodeExchange(e0))).toBe(hex(E_N0));
    expect(hex(encodeExchange(e1))).toBe(hex(E_N1));
    const d0 = exchangeDigest(P_N0, P_N1, e0.epubkey);
    const d1 = exchangeDigest(P_N1, P_N0, e1.epubkey);
    expect(hex(d0)).toBe('150011e80536d9599a3d7a349a77b3d61f9f86243060a535713bb62d62b90e8e');
    expect(hex(d1)).toBe('aa5a5713cc2a179d5b6658bfab6b5edd7de4db0119f97812d8909171759378d6');
    verifyExchange(e0.signature, d0, decodePropose(P_N0).pubkey);
    verifyExchange(e1.signature, d1, decodePropose(P_N1).pubkey);
    expect(hex(signExchange(d0, N0_SK))).toBe(hex(e0.signature));
    expect(hex(signExchange(d1, N1_SK))).toBe(hex(e1.signature));
  });

  it('rejects a signature over the wrong digest, a high-S twin and a key swap', () => {
    const e0 = decodeExchange(E_N0);
    const pk0 = decodePropose(P_N0).pubkey;
    const d0 = exchangeDigest(P_N0, P_N1, e0.epubkey);
    expect(() => verifyExchange(e0.signature, exchangeDigest(P_N1, P_N0, e0.epubkey), pk0)).toThrow(
      /does not verify/,
    );
    expect(() => verifyExchange(e0.signature, d0, decodePropose(P_N1).pubkey)).toThrow(/does not verify/);
    const sig = secp256k1.Signature.fromBytes(e0.signature, 'der');
    const high = new secp256k1.Signature(sig.r, secp256k1.Point.CURVE().n - sig.s).toBytes('der');
    expect(() => verifyExchange(high, d0, pk0)).toThrow(/does not verify/);
  });
});

describe('secio key schedule', () => {
  it('reproduces tentacle’s stretch_key unit vector', () => {
    expect(hex(stretchKey('SHA256', new Uint8Array(32), 32))).toBe(
      '67903cc75591ef474fc655a420358fcd3230990a25205501e23dc1019a78cf50',
    );
  });

  // Vector 2: a test peer and fiber-js n0, HMAC-SHA512, peer-ord Greater.
  const SHARED = h('06c425c228e4d2f136c43f7ab4eb81ebc5d184bb7607c07520e94b8d08851942');
  it('stretches the captured shared secret with SHA512 and decrypts the reference’s frames', () => {
    expect(hex(stretchKey('SHA512', SHARED, 128))).toBe(
      'd173c2618d1288187fd11e156d5476e5914e82f15eea4bee8b497ccb1422abf6c19ab606a27993fb3da01842ec050d7235b7b3426f07b89c3b46ed1355de53114769a4cd966b3e5fef10c6dc55ebbc236190bed3cca0c5aa53626f58dc70b65e321c90e56b85131012c28de086717af0d8acc556fffdd1ccdedb1acac86b5da8',
    );
    const keys = splitKeys('CHACHA20_POLY1305', 'SHA512', SHARED, 1); // the peer's view
    expect(hex(keys.local)).toBe('6d5476e5914e82f15eea4bee8b497ccb1422abf6c19ab606a27993fb3da01842');
    expect(hex(keys.remote)).toBe('55ebbc236190bed3cca0c5aa53626f58dc70b65e321c90e56b85131012c28de0');

    const fromFiber = new FrameCipher('CHACHA20_POLY1305', keys.remote);
    const frames: [string, string][] = [
      [
        '00000020aa5fac59e15c8c5cd6c600340d339a7d80b4bdfaf756ab1cc7b6d3e8b5c04ea1',
        '0693f357a6f4b67053c15b7cef9c08e5',
      ],
      ['0000001c3b7ae15715eea9f67a4346b15ec712558c858bda24ac1779fbac3ba7', '000100010000000100000000'],
      ['0000001c05d5c420c8cb1e0b5dcb9041dd091d769d700498f2d12feb89edf6bc', '000100010000000300000000'],
      [
        '00000048c71f814ef6f62408072602e1d87b076cd0c1cdae597429d0465c5fa23a303e41f7ce0539983dc11b69d46be597c60339b01e4ae1fbcc5057c1a3bae2e49a32f8d624574900e8ace4',
        '00000000000000010000002c00000028280000000c00000017000000070000002f7032702f3432110000000800000005000000302e302e31',
      ],
      [
        '00000048727ee45059763a11e42704c404cddf628495146742ef5e25b3df23bd18403c37e1b63458c85ca2c90c793986f30143580e6683bf6d8d6d7bb0e9c2b310f710ebf56c1d1d12b06f8f',
        '00000000000000030000002c00000028280000000c00000017000000070000002f7032702f3433110000000800000005000000302e302e31',
      ],
    ];
    for (const [frame, plain] of frames) expect(hex(fromFiber.open(unframe(frame)))).toBe(plain);

    const toFiber = new FrameCipher('CHACHA20_POLY1305', keys.local);
    const echo = toFiber.seal(h('d0862a74f7850479ccaad6039e446d56'));
    expect(hex(echo)).toBe(
      hex(unframe('00000020531f13d7cb85490c0e7f09d1a4d3729d5077530b2242b942831cda498b322248')),
    );
  });

  it('selects from the preferred side’s list (the active test of the transcript)', () => {
    // peer-ord Greater: the peer's list (SHA512 first) wins; Less: fiber's (SHA256 first).
    expect(selectBest(1, 'SHA512,SHA256', 'SHA256,SHA512', HASHES, 'hash')).toBe('SHA512');
    expect(selectBest(-1, 'SHA512,SHA256', 'SHA256,SHA512', HASHES, 'hash')).toBe('SHA256');
    expect(selectBest(-1, 'X25519,P-256', 'P-256,P-384,X25519', EXCHANGES, 'exchange')).toBe('P-256');
    expect(() => selectBest(1, 'X25519', 'P-384', EXCHANGES, 'exchange')).toThrow(/no common exchange/);
    // Unknown names are skipped even when both sides list them.
    expect(selectBest(1, 'P-384,X25519', 'P-384,X25519', EXCHANGES, 'exchange')).toBe('X25519');
  });

  it('rejects bad ephemeral keys and an all-zero X25519 secret', () => {
    const eph = generateEphemeral('X25519');
    expect(() => sharedSecret(eph, new Uint8Array(31))).toThrow(/X25519 key of 31 bytes/);
    expect(() => sharedSecret(eph, new Uint8Array(32))).toThrow(/secio: /);
    const p = generateEphemeral('P-256');
    expect(() => sharedSecret(p, new Uint8Array(65))).toThrow();
    expect(sharedSecret(p, generateEphemeral('P-256').publicKey).length).toBe(32);
  });
});

describe('§10 full handshake schedule, through our own handshake code', () => {
  it('produces the vector’s first encrypted frames in both directions', async () => {
    const skA = new Uint8Array(32).fill(0x11);
    const skB = new Uint8Array(32).fill(0x22);
    const pkA = secp256k1.getPublicKey(skA, true);
    const pkB = secp256k1.getPublicKey(skB, true);
    expect(hex(pkA)).toBe('034f355bdcb7cc0af728ef3cceb9615d90684bb5b2ca5f859ab0f0b704075871aa');
    const [ca, cb] = memoryPair();
    const [sa, sb] = await Promise.all([
      secioHandshake(ca, {
        secretKey: skA,
        publicKey: pkA,
        nonce: h('000102030405060708090a0b0c0d0e0f'),
        ephemeralSecret: new Uint8Array(32).fill(0x33),
        proposal: {
          exchanges: 'P-256,P-384,X25519',
          ciphers: 'AES-128-GCM,AES-256-GCM,CHACHA20_POLY1305',
          hashes: 'SHA256,SHA512',
        },
      }),
      secioHandshake(cb, {
        secretKey: skB,
        publicKey: pkB,
        nonce: h('101112131415161718191a1b1c1d1e1f'),
        ephemeralSecret: new Uint8Array(32).fill(0x44),
        proposal: { exchanges: 'X25519', ciphers: 'CHACHA20_POLY1305', hashes: 'SHA256' },
      }),
    ]);
    expect(sa.negotiated).toEqual({ exchange: 'X25519', cipher: 'CHACHA20_POLY1305', hash: 'SHA256' });
    expect(hex(sa.remotePubkey)).toBe(hex(pkB));
    expect(ca.written[0]!.length).toBe(4 + 173);
    expect(cb.written[0]!.length).toBe(4 + 130);
    const exA = decodeExchange(ca.written[1]!.subarray(4));
    const exB = decodeExchange(cb.written[1]!.subarray(4));
    expect(hex(exA.epubkey)).toBe('7b0d47d93427f8311160781c7c733fd89f88970aef490d8aa0ee19a4cb8a1b14');
    expect(hex(exB.epubkey)).toBe('ff2ee45601ec1b67310c7790404585ae697331eee1c1f8cf2419731c1fff3e6b');
    expect(hex(ca.written[2]!)).toBe(
      '00000020532aab4ed84b1c25c7ad20c72429e2b8aa0759af739df211e5a903cfe5aef811',
    );
    expect(hex(cb.written[2]!)).toBe(
      '000000207f5f80be312deb8f84aea80b1d983b6de28f688a877639095d5c55eaaaff7820',
    );
    sa.destroy();
    sb.destroy();
  });

  it('negotiates P-256 and AES-GCM when both prefer them, and carries data', async () => {
    const skA = secp256k1.utils.randomSecretKey();
    const skB = secp256k1.utils.randomSecretKey();
    const list = { exchanges: 'P-256', ciphers: 'AES-128-GCM', hashes: 'SHA512' };
    const [ca, cb] = memoryPair();
    const [sa, sb] = await Promise.all([
      secioHandshake(ca, { secretKey: skA, publicKey: secp256k1.getPublicKey(skA), proposal: list }),
      secioHandshake(cb, { secretKey: skB, publicKey: secp256k1.getPublicKey(skB), proposal: list }),
    ]);
    expect(sb.negotiated).toEqual({ exchange: 'P-256', cipher: 'AES-128-GCM', hash: 'SHA512' });
    const got: Uint8Array[] = [];
    sb.attach({ data: (d) => got.push(d), close: () => {} });
    sa.attach({ data: () => {}, close: () => {} });
    sa.write(new TextEncoder().encode('hello '));
    sa.write(new TextEncoder().encode('world'));
    await new Promise((r) => setTimeout(r, 10));
    expect(Buffer.concat(got).toString()).toBe('hello world');
    sa.destroy();
  });
});
