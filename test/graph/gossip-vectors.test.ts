/** Gossip codecs and signatures against the reference vectors (fiber-routing-protocol.md §3.6). */
import { multiaddr } from '@multiformats/multiaddr';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { describe, expect, it } from 'vitest';
import { readUdtWhitelist } from '../../src/chain/udt-whitelist.ts';
import { CURSOR_TYPE, makeCursor } from '../../src/graph/cursor.ts';
import {
  type ChannelUpdate,
  decodeGossipMessage,
  decodeNodeAnnouncement,
  encodeChannelUpdate,
  encodeGossipMessage,
  encodeNodeAnnouncement,
  encodeOutPoint,
  type NodeAnnouncement,
  type UdtArgInfo,
} from '../../src/graph/messages.ts';
import {
  channelUpdateDigest,
  nodeAnnouncementDigest,
  signChannelUpdate,
  signNodeAnnouncement,
  verifyChannelUpdate,
  verifyNodeAnnouncement,
} from '../../src/graph/signing.ts';
import { udtCfgInfosFromWhitelist } from '../../src/graph/udt-config.ts';
import { hex } from './helpers.ts';

const h = (s: string) => new Uint8Array(Buffer.from(s.replace(/^0x/, ''), 'hex'));
const text = (s: string) => new TextEncoder().encode(s);
const SK = new Uint8Array(32).fill(0x2a);
const NODE_ID = secp256k1.getPublicKey(SK, true);
const CHAIN = h('9c0a8fff24a7be339b92088730c2dc7fac6dfcbdf0a73774d6d2d6b29523fa5b');

function name(s: string): Uint8Array {
  const out = new Uint8Array(32);
  out.set(text(s));
  return out;
}

function udt(
  n: string,
  codeHash: string,
  hashType: number,
  args: string,
  amount: bigint,
  tx: string,
  index: number,
): UdtArgInfo {
  return {
    name: text(n),
    script: { codeHash: h(codeHash), hashType, args: text(args) },
    autoAcceptAmount: amount,
    cellDeps: [{ type: 'cellDep', outPoint: { txHash: h(tx), index }, depType: 0 }],
  };
}

const DEP_TX = 'f897bfc51766ee9cdb2b9279e63c8abdba4b35b6ee7dde5fed9b0a5a41c95dc4';

const node1: Omit<NodeAnnouncement, 'signature'> = {
  features: Uint8Array.of(0x15),
  timestamp: 1737451664358n,
  nodeId: NODE_ID,
  version: text('1.0'),
  nodeName: name('fiber-1'),
  addresses: [multiaddr('/ip4/127.0.0.1/tcp/8344/p2p/QmbvRjJHAQDmj3cgnUBGQ5zVnGxUKwb2qJygwNs2wk41h8').bytes],
  chainHash: CHAIN,
  autoAcceptMinCkbFundingAmount: 10000000000n,
  udtCfgInfos: [
    udt(
      'SIMPLE_UDT',
      'e1e354d6d643ad42724d40967e334984534e0367405c5ae42a9d7d63d77df419',
      4,
      '0x.*',
      1000n,
      DEP_TX,
      8,
    ),
    udt(
      'XUDT',
      '50bd8d6680b8b9cf98b73f3c08faf8b2a21914311954118ad6609be6e78a1b95',
      4,
      '0x.*',
      1000n,
      DEP_TX,
      9,
    ),
  ],
};

const node2: Omit<NodeAnnouncement, 'signature'> = {
  features: Uint8Array.of(0x15),
  timestamp: 1737449487183n,
  nodeId: NODE_ID,
  version: text('1.0'),
  nodeName: new Uint8Array(32),
  addresses: [
    multiaddr('/ip4/221.187.61.162/tcp/18228/p2p/QmSr3bkMcG9Fy3PAf3HdrxttAE6EiLxHitKJW6HmiV9o6U').bytes,
  ],
  chainHash: h('10639e0895502b5688a6be8cf69460d76541bfa4821629d86d62ba0aae3f9606'),
  autoAcceptMinCkbFundingAmount: 10000000000n,
  udtCfgInfos: [
    udt(
      'RUSD',
      '1142755a044bf2ee358cba9f2da187ce928c91cd4dc8692ded0337efa677d21a',
      1,
      '0x878fcc6f1f08d48e87bb1c3b3d5083f23f8a39c5d5c764f253b55b998526439b',
      1000000000n,
      'ed7d65b9ad3d99657e37c4285d585fea8a5fcaf58165d54dacf90243f911548b',
      0,
    ),
  ],
};

describe('NodeAnnouncement (upstream hard-coded vectors)', () => {
  it('node_id of [0x2a; 32]', () => {
    expect(hex(NODE_ID)).toBe('035be5e9478209674a96e60f1f037f6176540fd001fa1d64694770c56a7709c42c');
  });

  for (const [label, input, digest, sig] of [
    [
      'node1',
      node1,
      'c63db3aec76b6a62e9d563dc35450de058d37047f80dc6c60abad344dd48beba',
      'd5102b528c475e568981c43a8505606333129d4e71142482f59e5bb0a02bc70324d0cdf396eb6dd537c971de34bec77636565f54ded88b9dda53b65570b9ca70',
    ],
    [
      'node2',
      node2,
      '3e612fcfa66885352ac18e1fdd602199fb125fa4435ea509f472c0c870b0d307',
      '1fec23d92c9fc9fafd39f477bf1fbb79cfb8f63604a6aeb0712cfd7dbe31e4e21a174f4e6733e78970f4489859aa1ba615fe712d4d212dd7f1c1a6678dff5d00',
    ],
  ] as const) {
    it(`${label}: digest and signature byte for byte; decode re-encodes exactly; verification`, () => {
      const signed = signNodeAnnouncement(input, SK);
      expect(hex(nodeAnnouncementDigest(signed))).toBe(digest);
      expect(hex(signed.signature)).toBe(sig);
      expect(verifyNodeAnnouncement(signed)).toBe(true);
      const bytes = encodeNodeAnnouncement(signed);
      const back = decodeNodeAnnouncement(bytes);
      expect(encodeNodeAnnouncement(back)).toEqual(bytes);
      expect(verifyNodeAnnouncement(back)).toBe(true);
      expect(verifyNodeAnnouncement({ ...back, timestamp: back.timestamp + 1n })).toBe(false);
      expect(
        verifyNodeAnnouncement({ ...back, nodeId: secp256k1.getPublicKey(new Uint8Array(32).fill(3), true) }),
      ).toBe(false);
    });
  }
});

describe('UDT whitelist from the config JSON', () => {
  it('gives the molecule UdtArgInfos of the upstream vector (same digest)', () => {
    const dep = (index: string) => ({
      cell_dep: { out_point: { tx_hash: `0x${DEP_TX}`, index }, dep_type: 'code' },
    });
    const whitelist = readUdtWhitelist([
      {
        name: 'SIMPLE_UDT',
        script: {
          code_hash: '0xe1e354d6d643ad42724d40967e334984534e0367405c5ae42a9d7d63d77df419',
          hash_type: 'data2',
          args: '0x.*',
        },
        cell_deps: [dep('0x8')],
        auto_accept_amount: 1000n,
      },
      {
        name: 'XUDT',
        script: {
          code_hash: '0x50bd8d6680b8b9cf98b73f3c08faf8b2a21914311954118ad6609be6e78a1b95',
          hash_type: 'data2',
          args: '0x.*',
        },
        cell_deps: [dep('0x9')],
        auto_accept_amount: 1000n,
      },
    ]);
    const infos = udtCfgInfosFromWhitelist(whitelist.entries);
    expect(infos).toEqual(node1.udtCfgInfos);
    expect(hex(nodeAnnouncementDigest(signNodeAnnouncement({ ...node1, udtCfgInfos: infos }, SK)))).toBe(
      'c63db3aec76b6a62e9d563dc35450de058d37047f80dc6c60abad344dd48beba',
    );
  });
});

describe('ChannelUpdate, cursors and GossipMessage (derived vectors)', () => {
  const op = { txHash: new Uint8Array(32).fill(0x11), index: 0 };
  const unsigned: Omit<ChannelUpdate, 'signature'> = {
    chainHash: CHAIN,
    channelOutpoint: op,
    timestamp: 1737451664358n,
    messageFlags: 0,
    channelFlags: 0,
    tlcExpiryDelta: 14_400_000n,
    tlcMinimumValue: 0n,
    tlcMaximumValue: 0n,
    feeRate: 1000n,
  };

  it('unsigned 204-byte struct, digest and signature', () => {
    const zero = encodeChannelUpdate({ ...unsigned, signature: new Uint8Array(64) });
    expect(zero.length).toBe(204);
    expect(hex(zero)).toBe(
      '000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000009c0a8fff24a7be339b92088730c2dc7fac6dfcbdf0a73774d6d2d6b29523fa5b111111111111111111111111111111111111111111111111111111111111111100000000e673308894010000000000000000000000badb00000000000000000000000000000000000000000000000000000000000000000000000000e8030000000000000000000000000000',
    );
    const signed = signChannelUpdate(unsigned, SK);
    expect(hex(channelUpdateDigest(signed))).toBe(
      'afc1a00ebd86de3c623e05ad7862743bea328d273274a41f2dbcb3b05c099f78',
    );
    expect(hex(signed.signature)).toBe(
      '89f4c304806a298c8d3ac7cdcd58c52d71a782f463ddfbfae360058d088d3fc42c0ff13a37f57487ac6bab03392f7aa8259d5b87f79c6fcf7b675bf2caae7fb4',
    );
    const other = secp256k1.getPublicKey(new Uint8Array(32).fill(5), true);
    expect(verifyChannelUpdate(signed, NODE_ID, other)).toBe(true);
    expect(verifyChannelUpdate({ ...signed, messageFlags: 1 }, NODE_ID, other)).toBe(false);
  });

  it('cursors of a ChannelUpdate and a NodeAnnouncement', () => {
    const cu = makeCursor(1737451664358n, CURSOR_TYPE.ChannelUpdate, encodeOutPoint(op));
    expect(hex(cu)).toBe(
      '00000194883073e601111111111111111111111111111111111111111111111111111111111111111100000000',
    );
    const na = makeCursor(1737451664358n, CURSOR_TYPE.NodeAnnouncement, NODE_ID);
    expect(hex(na)).toBe(
      '00000194883073e602035be5e9478209674a96e60f1f037f6176540fd001fa1d64694770c56a7709c42c000000',
    );
  });

  it('GetBroadcastMessages (91 bytes) and BroadcastMessagesFilterResult (228 bytes)', () => {
    const after = makeCursor(1737451664358n, CURSOR_TYPE.ChannelUpdate, encodeOutPoint(op));
    const get = encodeGossipMessage({
      type: 'GetBroadcastMessages',
      id: 7n,
      chainHash: CHAIN,
      afterCursor: after,
      count: 100,
    });
    expect(hex(get)).toBe(
      '0200000007000000000000009c0a8fff24a7be339b92088730c2dc7fac6dfcbdf0a73774d6d2d6b29523fa5b00000194883073e6011111111111111111111111111111111111111111111111111111111111111111000000006400',
    );
    expect(decodeGossipMessage(get)).toEqual({
      type: 'GetBroadcastMessages',
      id: 7n,
      chainHash: CHAIN,
      afterCursor: after,
      count: 100,
    });
    const signed = signChannelUpdate(unsigned, SK);
    const result = encodeGossipMessage({
      type: 'BroadcastMessagesFilterResult',
      messages: [{ type: 'ChannelUpdate', value: signed }],
    });
    expect(result.length).toBe(228);
    expect(hex(result.subarray(0, 32))).toBe(
      '01000000e000000008000000d8000000080000000200000089f4c304806a298c',
    );
    expect(hex(sha256(result))).toBe('02ff381ba1e264526c37d928946f7122caf4a8818559c882eacc4d2578178516');
    expect(decodeGossipMessage(result)).toEqual({
      type: 'BroadcastMessagesFilterResult',
      messages: [{ type: 'ChannelUpdate', value: signed }],
    });
  });

  it('every GossipMessage kind round-trips', () => {
    const after = new Uint8Array(45).fill(1);
    const na = signNodeAnnouncement(node1, SK);
    const msgs = [
      { type: 'BroadcastMessagesFilter', chainHash: CHAIN, afterCursor: after },
      { type: 'GetBroadcastMessagesResult', id: 3n, messages: [{ type: 'NodeAnnouncement', value: na }] },
      {
        type: 'QueryBroadcastMessages',
        id: 9n,
        chainHash: CHAIN,
        queries: [
          { channelOutpoint: op, flags: 0 },
          { channelOutpoint: op, flags: 8 },
        ],
      },
      { type: 'QueryBroadcastMessagesResult', id: 9n, messages: [], missingQueries: [0, 1, 700] },
    ] as const;
    for (const m of msgs) expect(decodeGossipMessage(encodeGossipMessage(m as never))).toEqual(m);
  });
});
