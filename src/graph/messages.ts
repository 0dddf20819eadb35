/**
 * The gossip messages of the reference (`gossip.mol`, `ChannelUpdate` of `fiber.mol`;
 * `docs/reference/fiber-routing-protocol.md` §3.1) as molecule schemas (`codec/schema.ts`): one declaration per type gives both directions.
 * Text-like fields (version, node name, UDT name and args) stay raw bytes so that a decoded
 * message re-encodes to exactly the bytes that were signed.
 */
import { type Bytes, MoleculeError, mol } from '../codec/index.ts';

export const CHANNEL_UPDATE_SIZE = 204;
export const CURSOR_SIZE = 45;

const Byte32 = mol.byteArray(32);
const Byte33 = mol.byteArray(33);
const Byte64 = mol.byteArray(64);
const Cursor = mol.byteArray(CURSOR_SIZE, 'Cursor');

export const OutPoint = mol.OutPoint;
export type OutPoint = mol.Infer<typeof OutPoint>;

/** A CKB script in molecule form (`hash_type`: data 0, type 1, data1 2, data2 4). */
export const MolScript = mol.Script;
export type MolScript = mol.Infer<typeof MolScript>;

export const ChannelUpdate = mol.struct('ChannelUpdate', {
  signature: Byte64,
  chainHash: Byte32,
  channelOutpoint: OutPoint,
  timestamp: mol.u64,
  /** bit0: the update is node2's. */
  messageFlags: mol.u32,
  /** bit0: DISABLED. */
  channelFlags: mol.u32,
  tlcExpiryDelta: mol.u64,
  tlcMinimumValue: mol.u128,
  tlcMaximumValue: mol.u128,
  feeRate: mol.u128,
});
export type ChannelUpdate = mol.Infer<typeof ChannelUpdate>;

/** `args` is raw UTF-8 (a regex such as `0x.*` is allowed). */
const UdtScript = mol.table('UdtScript', { codeHash: Byte32, hashType: mol.u8, args: mol.bytes() });
export type UdtScript = mol.Infer<typeof UdtScript>;

export type UdtDep =
  | { type: 'cellDep'; outPoint: OutPoint; depType: number }
  | { type: 'script'; script: MolScript };
const UdtDep: mol.Schema<UdtDep> = mol.map(
  mol.union('UdtDep', {
    cellDep: mol.table('UdtCellDep', { outPoint: OutPoint, depType: mol.u8 }),
    script: MolScript,
  }),
  (u): UdtDep =>
    u.type === 'cellDep' ? { type: 'cellDep', ...u.value } : { type: 'script', script: u.value },
  (d: UdtDep) =>
    d.type === 'cellDep'
      ? { type: 'cellDep' as const, value: d }
      : { type: 'script' as const, value: d.script },
);

const UdtArgInfo = mol.table('UdtArgInfo', {
  name: mol.bytes(),
  script: UdtScript,
  autoAcceptAmount: mol.option(mol.u128),
  cellDeps: mol.dynvec('UdtCellDeps', UdtDep),
});
export type UdtArgInfo = mol.Infer<typeof UdtArgInfo>;

export const NodeAnnouncement = mol.table('NodeAnnouncement', {
  signature: Byte64,
  features: mol.bytes(),
  timestamp: mol.u64,
  nodeId: Byte33,
  version: mol.bytes(),
  /** UTF-8, zero-padded to 32 bytes. */
  nodeName: Byte32,
  /** Binary multiaddrs. */
  addresses: mol.dynvec('Addresses', mol.bytes()),
  chainHash: Byte32,
  autoAcceptMinCkbFundingAmount: mol.u64,
  udtCfgInfos: mol.dynvec('UdtCfgInfos', UdtArgInfo),
});
export type NodeAnnouncement = mol.Infer<typeof NodeAnnouncement>;

export const ChannelAnnouncement = mol.table('ChannelAnnouncement', {
  node1Signature: Byte64,
  node2Signature: Byte64,
  ckbSignature: Byte64,
  features: mol.u64,
  chainHash: Byte32,
  channelOutpoint: OutPoint,
  node1Id: Byte33,
  node2Id: Byte33,
  ckbKey: Byte32,
  capacity: mol.u128,
  udtTypeScript: mol.option(MolScript),
});
export type ChannelAnnouncement = mol.Infer<typeof ChannelAnnouncement>;

export const BroadcastMessage = mol.union('BroadcastMessage', {
  NodeAnnouncement,
  ChannelAnnouncement,
  ChannelUpdate,
});
export type BroadcastMessage = mol.Infer<typeof BroadcastMessage>;
const BroadcastMessages = mol.dynvec('BroadcastMessages', BroadcastMessage);

const BroadcastMessageQuery = mol.struct('BroadcastMessageQuery', {
  channelOutpoint: OutPoint,
  /** An enum, not bits: 0 CA, 1 CU of node1, 2 CU of node2, 4 NA of node1, 8 NA of node2. */
  flags: mol.u8,
});
export type BroadcastMessageQuery = mol.Infer<typeof BroadcastMessageQuery>;

export const GossipMessage = mol.flatUnion('GossipMessage', {
  BroadcastMessagesFilter: mol.struct('BroadcastMessagesFilter', { chainHash: Byte32, afterCursor: Cursor }),
  BroadcastMessagesFilterResult: mol.table('BroadcastMessagesFilterResult', { messages: BroadcastMessages }),
  GetBroadcastMessages: mol.struct('GetBroadcastMessages', {
    id: mol.u64,
    chainHash: Byte32,
    afterCursor: Cursor,
    count: mol.u16,
  }),
  GetBroadcastMessagesResult: mol.table('GetBroadcastMessagesResult', {
    id: mol.u64,
    messages: BroadcastMessages,
  }),
  QueryBroadcastMessages: mol.table('QueryBroadcastMessages', {
    id: mol.u64,
    chainHash: Byte32,
    queries: mol.fixvec('BroadcastMessageQueries', BroadcastMessageQuery),
  }),
  QueryBroadcastMessagesResult: mol.table('QueryBroadcastMessagesResult', {
    id: mol.u64,
    messages: BroadcastMessages,
    missingQueries: mol.fixvec('Uint16Vec', mol.u16),
  }),
});
export type GossipMessage = mol.Infer<typeof GossipMessage>;

export const GOSSIP_KINDS = [
  'BroadcastMessagesFilter',
  'BroadcastMessagesFilterResult',
  'GetBroadcastMessages',
  'GetBroadcastMessagesResult',
  'QueryBroadcastMessages',
  'QueryBroadcastMessagesResult',
] as const;

export const encodeOutPoint = (o: OutPoint): Bytes => OutPoint.encode(o);
export const decodeOutPoint = (b: Bytes): OutPoint => OutPoint.decode(b);
export const encodeScript = (s: MolScript): Bytes => MolScript.encode(s);
export const encodeChannelUpdate = (u: ChannelUpdate): Bytes => ChannelUpdate.encode(u);
export const decodeChannelUpdate = (b: Bytes): ChannelUpdate => ChannelUpdate.decode(b);
export const encodeNodeAnnouncement = (n: NodeAnnouncement): Bytes => NodeAnnouncement.encode(n);
export const decodeNodeAnnouncement = (b: Bytes): NodeAnnouncement => NodeAnnouncement.decode(b);
export const encodeChannelAnnouncement = (c: ChannelAnnouncement): Bytes => ChannelAnnouncement.encode(c);
export const encodeBroadcastMessage = (m: BroadcastMessage): Bytes => BroadcastMessage.encode(m);
export const decodeBroadcastMessage = (b: Bytes): BroadcastMessage => BroadcastMessage.decode(b);
export const encodeGossipMessage = (m: GossipMessage): Bytes => GossipMessage.encode(m);
/** Decodes one /p2p/43 payload; throws MoleculeError for anything malformed. */
export const decodeGossipMessage = (b: Bytes): GossipMessage => GossipMessage.decode(b);

export { MoleculeError };
