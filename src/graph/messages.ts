/**
 * The gossip messages of the reference (`gossip.mol`, `ChannelUpdate` of `fiber.mol`;
 * `docs/reference/fiber-routing-protocol.md` §3.1) with byte-exact molecule codecs.
 * Text-like fields (version, node name, UDT name and args) stay raw bytes so that a decoded
 * message re-encodes to exactly the bytes that were signed.
 */
import {
  type Bytes,
  byte,
  concat,
  fixed,
  fixvec,
  MoleculeError,
  option,
  readFixvec,
  readOption,
  readStruct,
  readTable,
  readU32le,
  readUintLe,
  readUnion,
  table,
  u32le,
  uintLe,
  union,
} from '../codec/index.ts';

export interface OutPoint {
  txHash: Bytes;
  index: number;
}

/** A CKB script in molecule form (`hash_type`: data 0, type 1, data1 2, data2 4). */
export interface MolScript {
  codeHash: Bytes;
  hashType: number;
  args: Bytes;
}

export interface ChannelUpdate {
  signature: Bytes;
  chainHash: Bytes;
  channelOutpoint: OutPoint;
  timestamp: bigint;
  /** bit0: the update is node2's. */
  messageFlags: number;
  /** bit0: DISABLED. */
  channelFlags: number;
  tlcExpiryDelta: bigint;
  tlcMinimumValue: bigint;
  tlcMaximumValue: bigint;
  feeRate: bigint;
}

export interface UdtScript {
  codeHash: Bytes;
  hashType: number;
  /** Raw UTF-8 (a regex such as `0x.*` is allowed). */
  args: Bytes;
}

export type UdtDep =
  | { type: 'cellDep'; outPoint: OutPoint; depType: number }
  | { type: 'script'; script: MolScript };

export interface UdtArgInfo {
  name: Bytes;
  script: UdtScript;
  autoAcceptAmount: bigint | null;
  cellDeps: UdtDep[];
}

export interface NodeAnnouncement {
  signature: Bytes;
  features: Bytes;
  timestamp: bigint;
  nodeId: Bytes;
  version: Bytes;
  /** UTF-8, zero-padded to 32 bytes. */
  nodeName: Bytes;
  /** Binary multiaddrs. */
  addresses: Bytes[];
  chainHash: Bytes;
  autoAcceptMinCkbFundingAmount: bigint;
  udtCfgInfos: UdtArgInfo[];
}

export interface ChannelAnnouncement {
  node1Signature: Bytes;
  node2Signature: Bytes;
  ckbSignature: Bytes;
  features: bigint;
  chainHash: Bytes;
  channelOutpoint: OutPoint;
  node1Id: Bytes;
  node2Id: Bytes;
  ckbKey: Bytes;
  capacity: bigint;
  udtTypeScript: MolScript | null;
}

export type BroadcastMessage =
  | { type: 'NodeAnnouncement'; value: NodeAnnouncement }
  | { type: 'ChannelAnnouncement'; value: ChannelAnnouncement }
  | { type: 'ChannelUpdate'; value: ChannelUpdate };

export interface BroadcastMessageQuery {
  channelOutpoint: OutPoint;
  /** An enum, not bits: 0 CA, 1 CU of node1, 2 CU of node2, 4 NA of node1, 8 NA of node2. */
  flags: number;
}

export type GossipMessage =
  | { type: 'BroadcastMessagesFilter'; chainHash: Bytes; afterCursor: Bytes }
  | { type: 'BroadcastMessagesFilterResult'; messages: BroadcastMessage[] }
  | { type: 'GetBroadcastMessages'; id: bigint; chainHash: Bytes; afterCursor: Bytes; count: number }
  | { type: 'GetBroadcastMessagesResult'; id: bigint; messages: BroadcastMessage[] }
  | { type: 'QueryBroadcastMessages'; id: bigint; chainHash: Bytes; queries: BroadcastMessageQuery[] }
  | {
      type: 'QueryBroadcastMessagesResult';
      id: bigint;
      messages: BroadcastMessage[];
      missingQueries: number[];
    };

export const GOSSIP_KINDS = [
  'BroadcastMessagesFilter',
  'BroadcastMessagesFilterResult',
  'GetBroadcastMessages',
  'GetBroadcastMessagesResult',
  'QueryBroadcastMessages',
  'QueryBroadcastMessagesResult',
] as const;

const BROADCAST_KINDS = ['NodeAnnouncement', 'ChannelAnnouncement', 'ChannelUpdate'] as const;

export const CHANNEL_UPDATE_SIZE = 204;
export const CURSOR_SIZE = 45;

// ---- small pieces ----

export function encodeOutPoint(o: OutPoint): Bytes {
  return concat(fixed(o.txHash, 32, 'tx_hash'), u32le(o.index));
}

export function decodeOutPoint(b: Bytes): OutPoint {
  const [h, i] = readStruct(b, [32, 4], 'OutPoint');
  return { txHash: h!.slice(), index: readU32le(i!, 0) };
}

export function encodeScript(s: MolScript): Bytes {
  return table([fixed(s.codeHash, 32, 'code_hash'), Uint8Array.of(s.hashType), fixvec(s.args)]);
}

export function decodeScript(b: Bytes): MolScript {
  const [c, t, a] = readTable(b, 'Script', 3);
  return {
    codeHash: fixed(c!, 32, 'code_hash').slice(),
    hashType: byte(t!, 'hash_type'),
    args: readFixvec(a!, 'args').slice(),
  };
}

function encodeUdtDep(d: UdtDep): Bytes {
  if (d.type === 'cellDep') return union(0, table([encodeOutPoint(d.outPoint), Uint8Array.of(d.depType)]));
  return union(1, encodeScript(d.script));
}

function decodeUdtDep(b: Bytes): UdtDep {
  const { id, body } = readUnion(b, 'UdtDep', 2);
  if (id === 1) return { type: 'script', script: decodeScript(body) };
  const [o, t] = readTable(body, 'UdtCellDep', 2);
  return { type: 'cellDep', outPoint: decodeOutPoint(o!), depType: byte(t!, 'dep_type') };
}

function encodeUdtArgInfo(u: UdtArgInfo): Bytes {
  return table([
    fixvec(u.name),
    table([
      fixed(u.script.codeHash, 32, 'code_hash'),
      Uint8Array.of(u.script.hashType),
      fixvec(u.script.args),
    ]),
    option(u.autoAcceptAmount === null ? null : uintLe(u.autoAcceptAmount, 16)),
    table(u.cellDeps.map(encodeUdtDep)),
  ]);
}

function decodeUdtArgInfo(b: Bytes): UdtArgInfo {
  const [n, s, a, d] = readTable(b, 'UdtArgInfo', 4);
  const [c, t, args] = readTable(s!, 'UdtScript', 3);
  const amount = readOption(a!);
  return {
    name: readFixvec(n!, 'name').slice(),
    script: {
      codeHash: fixed(c!, 32, 'code_hash').slice(),
      hashType: byte(t!, 'hash_type'),
      args: readFixvec(args!, 'args').slice(),
    },
    autoAcceptAmount: amount === null ? null : readUintLe(amount, 16, 'auto_accept_amount'),
    cellDeps: readTable(d!, 'UdtCellDeps').map(decodeUdtDep),
  };
}

// ---- broadcast messages ----

export function encodeChannelUpdate(u: ChannelUpdate): Bytes {
  return concat(
    fixed(u.signature, 64, 'signature'),
    fixed(u.chainHash, 32, 'chain_hash'),
    encodeOutPoint(u.channelOutpoint),
    uintLe(u.timestamp, 8),
    u32le(u.messageFlags),
    u32le(u.channelFlags),
    uintLe(u.tlcExpiryDelta, 8),
    uintLe(u.tlcMinimumValue, 16),
    uintLe(u.tlcMaximumValue, 16),
    uintLe(u.feeRate, 16),
  );
}

export function decodeChannelUpdate(b: Bytes): ChannelUpdate {
  const f = readStruct(b, [64, 32, 36, 8, 4, 4, 8, 16, 16, 16], 'ChannelUpdate');
  return {
    signature: f[0]!.slice(),
    chainHash: f[1]!.slice(),
    channelOutpoint: decodeOutPoint(f[2]!),
    timestamp: readUintLe(f[3]!, 8, 'timestamp'),
    messageFlags: readU32le(f[4]!, 0),
    channelFlags: readU32le(f[5]!, 0),
    tlcExpiryDelta: readUintLe(f[6]!, 8, 'tlc_expiry_delta'),
    tlcMinimumValue: readUintLe(f[7]!, 16, 'tlc_minimum_value'),
    tlcMaximumValue: readUintLe(f[8]!, 16, 'tlc_maximum_value'),
    feeRate: readUintLe(f[9]!, 16, 'tlc_fee_proportional_millionths'),
  };
}

export function encodeNodeAnnouncement(n: NodeAnnouncement): Bytes {
  return table([
    fixed(n.signature, 64, 'signature'),
    fixvec(n.features),
    uintLe(n.timestamp, 8),
    fixed(n.nodeId, 33, 'node_id'),
    fixvec(n.version),
    fixed(n.nodeName, 32, 'node_name'),
    table(n.addresses.map((a) => fixvec(a))),
    fixed(n.chainHash, 32, 'chain_hash'),
    uintLe(n.autoAcceptMinCkbFundingAmount, 8),
    table(n.udtCfgInfos.map(encodeUdtArgInfo)),
  ]);
}

export function decodeNodeAnnouncement(b: Bytes): NodeAnnouncement {
  const f = readTable(b, 'NodeAnnouncement', 10);
  return {
    signature: fixed(f[0]!, 64, 'signature').slice(),
    features: readFixvec(f[1]!, 'features').slice(),
    timestamp: readUintLe(f[2]!, 8, 'timestamp'),
    nodeId: fixed(f[3]!, 33, 'node_id').slice(),
    version: readFixvec(f[4]!, 'version').slice(),
    nodeName: fixed(f[5]!, 32, 'node_name').slice(),
    addresses: readTable(f[6]!, 'address').map((a) => readFixvec(a, 'address').slice()),
    chainHash: fixed(f[7]!, 32, 'chain_hash').slice(),
    autoAcceptMinCkbFundingAmount: readUintLe(f[8]!, 8, 'auto_accept_min_ckb_funding_amount'),
    udtCfgInfos: readTable(f[9]!, 'UdtCfgInfos').map(decodeUdtArgInfo),
  };
}

export function encodeChannelAnnouncement(c: ChannelAnnouncement): Bytes {
  return table([
    fixed(c.node1Signature, 64, 'node1_signature'),
    fixed(c.node2Signature, 64, 'node2_signature'),
    fixed(c.ckbSignature, 64, 'ckb_signature'),
    uintLe(c.features, 8),
    fixed(c.chainHash, 32, 'chain_hash'),
    encodeOutPoint(c.channelOutpoint),
    fixed(c.node1Id, 33, 'node1_id'),
    fixed(c.node2Id, 33, 'node2_id'),
    fixed(c.ckbKey, 32, 'ckb_key'),
    uintLe(c.capacity, 16),
    option(c.udtTypeScript ? encodeScript(c.udtTypeScript) : null),
  ]);
}

export function decodeChannelAnnouncement(b: Bytes): ChannelAnnouncement {
  const f = readTable(b, 'ChannelAnnouncement', 11);
  const script = readOption(f[10]!);
  return {
    node1Signature: fixed(f[0]!, 64, 'node1_signature').slice(),
    node2Signature: fixed(f[1]!, 64, 'node2_signature').slice(),
    ckbSignature: fixed(f[2]!, 64, 'ckb_signature').slice(),
    features: readUintLe(f[3]!, 8, 'features'),
    chainHash: fixed(f[4]!, 32, 'chain_hash').slice(),
    channelOutpoint: decodeOutPoint(f[5]!),
    node1Id: fixed(f[6]!, 33, 'node1_id').slice(),
    node2Id: fixed(f[7]!, 33, 'node2_id').slice(),
    ckbKey: fixed(f[8]!, 32, 'ckb_key').slice(),
    capacity: readUintLe(f[9]!, 16, 'capacity'),
    udtTypeScript: script === null ? null : decodeScript(script),
  };
}

export function encodeBroadcastMessage(m: BroadcastMessage): Bytes {
  switch (m.type) {
    case 'NodeAnnouncement':
      return union(0, encodeNodeAnnouncement(m.value));
    case 'ChannelAnnouncement':
      return union(1, encodeChannelAnnouncement(m.value));
    case 'ChannelUpdate':
      return union(2, encodeChannelUpdate(m.value));
  }
}

export function decodeBroadcastMessage(b: Bytes): BroadcastMessage {
  const { id, body } = readUnion(b, 'BroadcastMessage', 3);
  const type = BROADCAST_KINDS[id]!;
  if (type === 'NodeAnnouncement') return { type, value: decodeNodeAnnouncement(body) };
  if (type === 'ChannelAnnouncement') return { type, value: decodeChannelAnnouncement(body) };
  return { type, value: decodeChannelUpdate(body) };
}

// ---- the GossipMessage union ----

export function encodeGossipMessage(m: GossipMessage): Bytes {
  const msgs = (list: BroadcastMessage[]) => table(list.map(encodeBroadcastMessage));
  switch (m.type) {
    case 'BroadcastMessagesFilter':
      return union(
        0,
        concat(fixed(m.chainHash, 32, 'chain_hash'), fixed(m.afterCursor, CURSOR_SIZE, 'cursor')),
      );
    case 'BroadcastMessagesFilterResult':
      return union(1, table([msgs(m.messages)]));
    case 'GetBroadcastMessages':
      return union(
        2,
        concat(
          uintLe(m.id, 8),
          fixed(m.chainHash, 32, 'chain_hash'),
          fixed(m.afterCursor, CURSOR_SIZE, 'cursor'),
          uintLe(BigInt(m.count), 2),
        ),
      );
    case 'GetBroadcastMessagesResult':
      return union(3, table([uintLe(m.id, 8), msgs(m.messages)]));
    case 'QueryBroadcastMessages':
      return union(
        4,
        table([
          uintLe(m.id, 8),
          fixed(m.chainHash, 32, 'chain_hash'),
          fixvec(
            concat(
              ...m.queries.map((q) => concat(encodeOutPoint(q.channelOutpoint), Uint8Array.of(q.flags))),
            ),
            37,
          ),
        ]),
      );
    case 'QueryBroadcastMessagesResult':
      return union(
        5,
        table([
          uintLe(m.id, 8),
          msgs(m.messages),
          fixvec(concat(...m.missingQueries.map((i) => uintLe(BigInt(i), 2))), 2),
        ]),
      );
  }
}

/** Decodes one /p2p/43 payload; throws MoleculeError for anything malformed. */
export function decodeGossipMessage(b: Bytes): GossipMessage {
  const { id, body } = readUnion(b, 'GossipMessage', 6);
  const msgs = (x: Bytes) => readTable(x, 'BroadcastMessages').map(decodeBroadcastMessage);
  switch (id) {
    case 0: {
      const [c, a] = readStruct(body, [32, CURSOR_SIZE], 'BroadcastMessagesFilter');
      return { type: 'BroadcastMessagesFilter', chainHash: c!.slice(), afterCursor: a!.slice() };
    }
    case 1: {
      const [m] = readTable(body, 'BroadcastMessagesFilterResult', 1);
      return { type: 'BroadcastMessagesFilterResult', messages: msgs(m!) };
    }
    case 2: {
      const [i, c, a, n] = readStruct(body, [8, 32, CURSOR_SIZE, 2], 'GetBroadcastMessages');
      return {
        type: 'GetBroadcastMessages',
        id: readUintLe(i!, 8, 'id'),
        chainHash: c!.slice(),
        afterCursor: a!.slice(),
        count: Number(readUintLe(n!, 2, 'count')),
      };
    }
    case 3: {
      const [i, m] = readTable(body, 'GetBroadcastMessagesResult', 2);
      return { type: 'GetBroadcastMessagesResult', id: readUintLe(i!, 8, 'id'), messages: msgs(m!) };
    }
    case 4: {
      const [i, c, q] = readTable(body, 'QueryBroadcastMessages', 3);
      const raw = readFixvec(q!, 'queries', 37);
      const queries: BroadcastMessageQuery[] = [];
      for (let at = 0; at < raw.length; at += 37) {
        queries.push({ channelOutpoint: decodeOutPoint(raw.subarray(at, at + 36)), flags: raw[at + 36]! });
      }
      return {
        type: 'QueryBroadcastMessages',
        id: readUintLe(i!, 8, 'id'),
        chainHash: fixed(c!, 32, 'chain_hash').slice(),
        queries,
      };
    }
    default: {
      const [i, m, q] = readTable(body, 'QueryBroadcastMessagesResult', 3);
      const raw = readFixvec(q!, 'missing_queries', 2);
      const missingQueries: number[] = [];
      for (let at = 0; at < raw.length; at += 2) missingQueries.push(raw[at]! | (raw[at + 1]! << 8));
      return {
        type: 'QueryBroadcastMessagesResult',
        id: readUintLe(i!, 8, 'id'),
        messages: msgs(m!),
        missingQueries,
      };
    }
  }
}

export { MoleculeError };
