/**
 * The in-memory network graph: announced nodes and channels with each direction's policy, fed by
 * verified gossip and by the node's own channels (which carry the exact outbound liquidity and
 * override gossip about them, as in the reference). It is the `RoutingGraph` the path finder
 * reads. Pure data structure: no I/O.
 */

import { bytesToHex, HASH_TYPE_BYTE } from '../codec/index.ts';
import type {
  ChannelAnnouncement,
  ChannelUpdate,
  MolScript,
  NodeAnnouncement,
  OutPoint,
} from './messages.ts';
import { encodeOutPoint, encodeScript } from './messages.ts';
import { compareEdges, type RouteEdge, type RoutingGraph } from './pathfind.ts';

/** 14 days: a ChannelUpdate with a larger delta is ignored. */
export const MAX_TLC_EXPIRY_DELTA = 1_209_600_000n;

/** One direction's policy (`ChannelUpdateInfo`). */
export interface ChannelUpdateInfo {
  timestamp: bigint;
  enabled: boolean;
  /** Exact balance, known only for the node's own channels. */
  outboundLiquidity: bigint | null;
  tlcExpiryDelta: bigint;
  tlcMinimumValue: bigint;
  feeRate: bigint;
}

export interface ChannelInfo {
  /** OutPointHex. */
  outpoint: string;
  /** Smaller pubkey (66 hex, no 0x). */
  node1: string;
  node2: string;
  capacity: bigint;
  /** Funding block timestamp (the announcement's cursor time); ms. */
  createdTimestamp: bigint;
  chainHash: Bytes32Hex;
  udtTypeScript: MolScript | null;
  /** Policy of node1 → node2. */
  update1: ChannelUpdateInfo | null;
  /** Policy of node2 → node1. */
  update2: ChannelUpdateInfo | null;
  /** True for the node's own channels (gossip about them is ignored). */
  own: boolean;
}

type Bytes32Hex = string;

export interface NodeInfo {
  pubkey: string;
  announcement: NodeAnnouncement;
}

export function pubkeyHex(b: Uint8Array): string {
  return bytesToHex(b, false);
}

export function outpointHex(o: OutPoint): string {
  return bytesToHex(encodeOutPoint(o));
}

/** Canonical key of a UDT type script for equality (null for CKB). */
export function udtKey(s: MolScript | null | undefined): string | null {
  return s ? bytesToHex(encodeScript(s)) : null;
}

/**
 * The same key from a CKB JSON script (`{code_hash, hash_type, args}`, as RPC params carry it);
 * null when it is not a valid script.
 */
export function udtKeyFromJson(
  script: { code_hash: string; hash_type: string; args: string } | null | undefined,
): string | null {
  if (!script) return null;
  const hashType = HASH_TYPE_BYTE[script.hash_type];
  if (
    hashType === undefined ||
    !/^0x[0-9a-fA-F]{64}$/.test(script.code_hash) ||
    !/^0x([0-9a-fA-F]{2})*$/.test(script.args)
  )
    return null;
  return udtKey({
    codeHash: new Uint8Array(Buffer.from(script.code_hash.slice(2), 'hex')),
    hashType,
    args: new Uint8Array(Buffer.from(script.args.slice(2), 'hex')),
  });
}

/**
 * A route request's `udt` as the graph keys it: the molecule hex of `udtKey`, or — accepted for
 * convenience — the JSON text of a CKB script.
 */
export function normaliseUdtKey(udt: string | null | undefined): string | null {
  if (!udt) return null;
  if (udt.startsWith('{')) {
    try {
      return udtKeyFromJson(JSON.parse(udt)) ?? udt;
    } catch {
      return udt;
    }
  }
  return udt;
}

/** Feature bits 2/3 (BASIC_MPP required/optional). */
function supportsMppBits(features: Uint8Array): boolean {
  return ((features[0] ?? 0) & 0b1100) !== 0;
}

export function updateInfoFrom(u: ChannelUpdate): ChannelUpdateInfo {
  return {
    timestamp: u.timestamp,
    enabled: (u.channelFlags & 1) === 0,
    outboundLiquidity: null,
    tlcExpiryDelta: u.tlcExpiryDelta,
    tlcMinimumValue: u.tlcMinimumValue,
    feeRate: u.feeRate,
  };
}

export type UpdateOutcome = 'applied' | 'stale' | 'unknown-channel' | 'own-channel' | 'invalid';

export class NetworkGraph implements RoutingGraph {
  private readonly nodesById = new Map<string, NodeInfo>();
  private readonly channelsById = new Map<string, ChannelInfo>();
  private readonly nodeChannels = new Map<string, Set<string>>();
  /** Sorted inbound edges per node, rebuilt lazily after any change. */
  private readonly inboundCache = new Map<string, RouteEdge[]>();

  /** Drops cached edges; every mutation calls it. */
  private touch(): void {
    this.inboundCache.clear();
  }

  constructor(
    /** This node's pubkey (66 hex). */
    readonly source: string,
  ) {}

  // ---- reads ----

  node(pubkey: string): NodeInfo | undefined {
    return this.nodesById.get(pubkey);
  }

  channel(outpoint: string): ChannelInfo | undefined {
    return this.channelsById.get(outpoint);
  }

  nodes(): IterableIterator<NodeInfo> {
    return this.nodesById.values();
  }

  channels(): IterableIterator<ChannelInfo> {
    return this.channelsById.values();
  }

  get nodeCount(): number {
    return this.nodesById.size;
  }

  get channelCount(): number {
    return this.channelsById.size;
  }

  channelsOf(pubkey: string): ChannelInfo[] {
    return [...(this.nodeChannels.get(pubkey) ?? [])].map((o) => this.channelsById.get(o)!).filter(Boolean);
  }

  // ---- gossip input (already verified) ----

  /** Keeps only a newer announcement per node; returns whether it was applied. */
  applyNodeAnnouncement(a: NodeAnnouncement): boolean {
    const pubkey = pubkeyHex(a.nodeId);
    const old = this.nodesById.get(pubkey);
    if (old && old.announcement.timestamp >= a.timestamp) return false;
    this.nodesById.set(pubkey, { pubkey, announcement: a });
    return true;
  }

  /** A channel is immutable per outpoint; own channels are fed by `upsertOwnChannel`. */
  applyChannelAnnouncement(a: ChannelAnnouncement, createdTimestamp: bigint): boolean {
    const outpoint = outpointHex(a.channelOutpoint);
    const existing = this.channelsById.get(outpoint);
    if (existing) {
      if (existing.own && existing.createdTimestamp === 0n) existing.createdTimestamp = createdTimestamp;
      return false;
    }
    const [n1, n2] = [pubkeyHex(a.node1Id), pubkeyHex(a.node2Id)].sort();
    this.addChannel({
      outpoint,
      node1: n1!,
      node2: n2!,
      capacity: a.capacity,
      createdTimestamp,
      chainHash: bytesToHex(a.chainHash),
      udtTypeScript: a.udtTypeScript,
      update1: null,
      update2: null,
      own: false,
    });
    return true;
  }

  applyChannelUpdate(u: ChannelUpdate): UpdateOutcome {
    this.touch();
    const outpoint = outpointHex(u.channelOutpoint);
    const c = this.channelsById.get(outpoint);
    if (!c) return 'unknown-channel';
    if (c.own) return 'own-channel';
    if (u.tlcExpiryDelta > MAX_TLC_EXPIRY_DELTA) return 'invalid';
    const ofNode2 = (u.messageFlags & 1) === 1;
    const old = ofNode2 ? c.update2 : c.update1;
    if (old && u.timestamp <= old.timestamp) return 'stale';
    const info = updateInfoFrom(u);
    if (ofNode2) c.update2 = info;
    else c.update1 = info;
    return 'applied';
  }

  // ---- the node's own channels (from the channel layer) ----

  /**
   * Adds or replaces one of this node's channels (the reference's `OwnedChannelUpdateEvent::Up`).
   * `local` is this node's policy with its outbound liquidity; `remote` the peer's (its balance
   * as liquidity when known). Private channels are routable from here but never gossiped.
   */
  upsertOwnChannel(o: {
    outpoint: string;
    peer: string;
    capacity: bigint;
    udtTypeScript?: MolScript | null;
    createdTimestamp?: bigint;
    chainHash?: string;
    local: ChannelUpdateInfo | null;
    remote: ChannelUpdateInfo | null;
  }): void {
    const localIsNode1 = this.source < o.peer;
    const existing = this.channelsById.get(o.outpoint);
    if (existing) this.removeChannel(o.outpoint);
    this.addChannel({
      outpoint: o.outpoint,
      node1: localIsNode1 ? this.source : o.peer,
      node2: localIsNode1 ? o.peer : this.source,
      capacity: o.capacity,
      createdTimestamp: o.createdTimestamp ?? existing?.createdTimestamp ?? 0n,
      chainHash: o.chainHash ?? existing?.chainHash ?? '',
      udtTypeScript: o.udtTypeScript ?? null,
      update1: localIsNode1 ? o.local : o.remote,
      update2: localIsNode1 ? o.remote : o.local,
      own: true,
    });
  }

  /** One direction of an own channel changed (balance, fee, enabled): `Updated(outpoint, node, info)`. */
  updateOwnChannel(outpoint: string, node: string, info: ChannelUpdateInfo): void {
    this.touch();
    const c = this.channelsById.get(outpoint);
    if (!c) return;
    if (node === c.node1) c.update1 = info;
    if (node === c.node2) c.update2 = info;
  }

  /** The channel is gone or its peer unreachable (`Down`). */
  removeChannel(outpoint: string): void {
    this.touch();
    const c = this.channelsById.get(outpoint);
    if (!c) return;
    this.channelsById.delete(outpoint);
    for (const n of [c.node1, c.node2]) {
      const set = this.nodeChannels.get(n);
      set?.delete(outpoint);
      if (set?.size === 0) this.nodeChannels.delete(n);
    }
  }

  removeNode(pubkey: string): void {
    this.nodesById.delete(pubkey);
  }

  /** After PermanentChannelFailure, ChannelDisabled, UnknownNextPeer: both directions off. */
  markChannelFailed(outpoint: string): void {
    this.touch();
    const c = this.channelsById.get(outpoint);
    if (!c) return;
    if (c.update1) c.update1.enabled = false;
    if (c.update2) c.update2.enabled = false;
  }

  /** After PermanentNodeFailure: every direction into the node off. */
  markNodeFailed(pubkey: string): void {
    this.touch();
    for (const c of this.channelsOf(pubkey)) {
      if (c.node1 === pubkey && c.update2) c.update2.enabled = false;
      if (c.node2 === pubkey && c.update1) c.update1.enabled = false;
    }
  }

  /** Drops channels whose newest timestamp is older than `before` (ms); returns their outpoints. */
  pruneStale(before: bigint): string[] {
    this.touch();
    const dropped: string[] = [];
    for (const c of [...this.channelsById.values()]) {
      if (c.own) continue;
      const newest = [c.createdTimestamp, c.update1?.timestamp ?? 0n, c.update2?.timestamp ?? 0n].reduce(
        (a, b) => (a > b ? a : b),
      );
      if (newest < before) {
        this.removeChannel(c.outpoint);
        dropped.push(c.outpoint);
      }
    }
    return dropped;
  }

  /** Inserts or replaces a channel record as is (store loading, tests). */
  putChannel(c: ChannelInfo): void {
    if (this.channelsById.has(c.outpoint)) this.removeChannel(c.outpoint);
    this.addChannel(c);
  }

  private addChannel(c: ChannelInfo): void {
    this.touch();
    this.channelsById.set(c.outpoint, c);
    for (const n of [c.node1, c.node2]) {
      let set = this.nodeChannels.get(n);
      if (!set) {
        set = new Set();
        this.nodeChannels.set(n, set);
      }
      set.add(c.outpoint);
    }
  }

  // ---- RoutingGraph ----

  private toEdge(c: ChannelInfo, fromNode1: boolean): RouteEdge {
    const u = (fromNode1 ? c.update1 : c.update2)!;
    const t1 = c.update1?.timestamp ?? 0n;
    const t2 = c.update2?.timestamp ?? 0n;
    return {
      from: fromNode1 ? c.node1 : c.node2,
      to: fromNode1 ? c.node2 : c.node1,
      outpoint: c.outpoint,
      capacity: c.capacity,
      udt: udtKey(c.udtTypeScript),
      feeRate: u.feeRate,
      tlcExpiryDelta: Number(u.tlcExpiryDelta),
      tlcMinimumValue: u.tlcMinimumValue,
      outboundLiquidity: u.outboundLiquidity,
      lastUpdate: t1 > t2 ? t1 : t2,
    };
  }

  /** Enabled edges into `node`, sorted in the reference's order (cached until the next change). */
  inbounds(node: string): RouteEdge[] {
    const cached = this.inboundCache.get(node);
    if (cached) return cached;
    const out: RouteEdge[] = [];
    for (const o of this.nodeChannels.get(node) ?? []) {
      const c = this.channelsById.get(o)!;
      if (node === c.node2 && c.update1?.enabled) out.push(this.toEdge(c, true));
      else if (node === c.node1 && c.update2?.enabled) out.push(this.toEdge(c, false));
    }
    out.sort(compareEdges);
    this.inboundCache.set(node, out);
    return out;
  }

  outbounds(node: string): RouteEdge[] {
    const out: RouteEdge[] = [];
    for (const o of this.nodeChannels.get(node) ?? []) {
      const c = this.channelsById.get(o)!;
      if (node === c.node1 && c.update1?.enabled) out.push(this.toEdge(c, true));
      else if (node === c.node2 && c.update2?.enabled) out.push(this.toEdge(c, false));
    }
    return out;
  }

  edge(outpoint: string, from: string): { edge: RouteEdge; enabled: boolean } | undefined {
    const c = this.channelsById.get(outpoint);
    if (!c) return undefined;
    const fromNode1 = from === c.node1;
    if (!fromNode1 && from !== c.node2) return undefined;
    const u = fromNode1 ? c.update1 : c.update2;
    if (!u) return undefined;
    return { edge: this.toEdge(c, fromNode1), enabled: u.enabled };
  }

  supportsMpp(node: string): boolean {
    const n = this.nodesById.get(node);
    return n ? supportsMppBits(n.announcement.features) : true;
  }
}

/** Whether an own channel in the graph already has the state `upsertOwnChannel` would give it. */
export function sameOwnChannel(
  have: ChannelInfo,
  want: Parameters<NetworkGraph['upsertOwnChannel']>[0],
  self: string,
): boolean {
  const localIsNode1 = have.node1 === self;
  const [local, remote] = localIsNode1 ? [have.update1, have.update2] : [have.update2, have.update1];
  const peer = localIsNode1 ? have.node2 : have.node1;
  return (
    peer === want.peer &&
    have.capacity === want.capacity &&
    udtKey(have.udtTypeScript) === udtKey(want.udtTypeScript ?? null) &&
    samePolicy(local, want.local) &&
    samePolicy(remote, want.remote)
  );
}

function samePolicy(a: ChannelUpdateInfo | null, b: ChannelUpdateInfo | null): boolean {
  if (a === null || b === null) return a === b;
  return (
    a.enabled === b.enabled &&
    a.outboundLiquidity === b.outboundLiquidity &&
    a.tlcExpiryDelta === b.tlcExpiryDelta &&
    a.tlcMinimumValue === b.tlcMinimumValue &&
    a.feeRate === b.feeRate &&
    a.timestamp === b.timestamp
  );
}
