/**
 * The graph service: gossip over /p2p/43 (`docs/reference/fiber-routing-protocol.md` §3),
 * the persisted message store, the network graph and payment history, and the path-finding entry
 * the payment layer calls. The sync with peers is `gossip-sync.ts`.
 *
 * An update whose channel announcement is unknown is held and the announcement is queried from
 * the sender (`QueryBroadcastMessages`). Every message is verified (chain hash, clock skew,
 * signatures, funding on chain) before it is stored, applied and relayed; messages are processed
 * one at a time through a queue. Deliberate difference: messages are verified and saved as they
 * arrive rather than on the reference's 20-second store tick.
 */
import { multiaddr } from '@multiformats/multiaddr';
import { compareBytes, equalBytes } from '../codec/index.ts';
import type { Db } from '../store/index.ts';
import { cursorOf, hasPublicAddress, sameMessage } from './broadcast.ts';
import { type BuildPathRequest, buildPath } from './build-path.ts';
import { CURSOR_TYPE, cursorTimestamp } from './cursor.ts';
import { GraphError } from './errors.ts';
import type { FundingChecker } from './funding.ts';
import { type GossipPeers, GossipSync, type GraphLogger } from './gossip-sync.ts';
import {
  applyAttemptResult,
  directionOf,
  judgeFailure,
  judgeSuccess,
  PaymentHistory,
  type SessionRouteNode,
} from './history.ts';
import { HistoryWriter } from './history-writer.ts';
import {
  type BroadcastMessage,
  type ChannelAnnouncement,
  type ChannelUpdate,
  decodeGossipMessage,
  type GossipMessage,
  type NodeAnnouncement,
  type UdtArgInfo,
} from './messages.ts';
import {
  type ChannelUpdateInfo,
  NetworkGraph,
  normaliseUdtKey,
  outpointHex,
  pubkeyHex,
  sameOwnChannel,
} from './network-graph.ts';
import { findPathInRange, maxRoutableAmount } from './path-range.ts';
import { checkOutboundLiquidity, type FindRouteRequest, findPath, type RouterHop } from './pathfind.ts';
import {
  signChannelUpdate,
  signNodeAnnouncement,
  verifyChannelAnnouncement,
  verifyChannelUpdate,
  verifyNodeAnnouncement,
} from './signing.ts';
import { GraphStore, messageKey } from './store.ts';

const PRUNE_AFTER = 28n * 86_400_000n;
const MAX_CLOCK_SKEW = 60_000n;
/** Updates waiting for their channel announcement, at most this many. */
const MAX_HELD_UPDATES = 1000;

const SILENT: GraphLogger = { debug() {}, info() {}, warn() {} };

export interface GraphServiceOptions {
  db: Db;
  /** This node's key: pubkey for the graph's source, secret key to sign its own messages. */
  identity: { secretKey: Uint8Array; pubkeyHex: string };
  chainHash: Uint8Array;
  peers?: GossipPeers;
  /** On-chain check of channel announcements; without it they are refused. */
  funding?: FundingChecker;
  logger?: GraphLogger;
  /** Keep node announcements that have no public address (fnn `announce_private_addr`). */
  announcePrivateAddr?: boolean;
  /** Clock (ms), for tests. */
  now?: () => number;
  /** Timers (prune daily); off in tests that drive `prune()` themselves. */
  timers?: boolean;
}

export interface NodeAnnouncementOptions {
  nodeName?: string;
  /** Multiaddr strings. */
  addresses?: string[];
  features?: Uint8Array;
  version?: string;
  autoAcceptMinCkbFundingAmount?: bigint;
  udtCfgInfos?: UdtArgInfo[];
}

/** A decoded TlcErr as the graph needs it (the payment layer maps `TlcErr` to this). */
export interface PaymentFailure {
  /** TlcErrorCode name, e.g. `TemporaryChannelFailure`. */
  code: string;
  /** The erring node (the error's extra data), 66 hex; null when absent. */
  nodeId: string | null;
  /** `ChannelFailed.channel_outpoint` (OutPointHex). */
  channelOutpoint?: string | null;
  /** `ChannelFailed.channel_update`, re-broadcast when the code has the UPDATE bit. */
  channelUpdate?: ChannelUpdate | null;
  /** Set when the numeric code has the UPDATE bit (0x1000), if the caller has the number. */
  updateFlag?: boolean;
}

/** Codes with the UPDATE flag (0x1000). */
const TLC_UPDATE_CODES = new Set([
  'TemporaryChannelFailure',
  'AmountBelowMinimum',
  'FeeInsufficient',
  'IncorrectTlcExpiry',
  'ChannelDisabled',
]);

/** A channel as `graph_channels` lists it: its announcement, its funding time, both updates. */
export interface ListedChannel {
  announcement: ChannelAnnouncement;
  createdTimestamp: bigint;
  update1: ChannelUpdate | null;
  update2: ChannelUpdate | null;
}

export type GossipOutcome = 'accepted' | 'duplicate' | 'stale' | 'held' | 'rejected';

export class GraphService {
  readonly graph: NetworkGraph;
  readonly history: PaymentHistory;
  readonly store: GraphStore;
  private readonly log: GraphLogger;
  private readonly now: () => number;
  private readonly sync: GossipSync;
  /** Channels seen per node in attempt results (the reference's `nodes_to_channel_map`). */
  private readonly failedNodeChannels = new Map<string, Set<string>>();
  private readonly held = new Map<string, { update: ChannelUpdate; from?: string }[]>();
  private queue: Promise<unknown> = Promise.resolve();
  private unsubscribe?: () => void;
  private readonly historyWriter: HistoryWriter;
  private readonly listeners: [string, (...a: never[]) => void][] = [];
  private pruneTimer?: NodeJS.Timeout;
  private announceTimer?: NodeJS.Timeout;

  constructor(private readonly o: GraphServiceOptions) {
    this.log = o.logger ?? SILENT;
    this.now = o.now ?? Date.now;
    this.store = new GraphStore(o.db);
    this.graph = new NetworkGraph(o.identity.pubkeyHex);
    this.historyWriter = new HistoryWriter(
      (op, d, r) => this.store.saveHistory(op, d, r),
      (err) => this.log.warn({ err: err.message }, 'payment history not stored'),
    );
    this.history = new PaymentHistory((op, d, r) => this.historyWriter.changed(op, d, r));
    this.sync = new GossipSync({
      store: this.store,
      chainHash: o.chainHash,
      peers: o.peers,
      log: this.log,
      now: this.now,
      pubkey: o.identity.pubkeyHex,
      verifyAndAccept: (m, from) => this.verifyAndAccept(m, from),
    });
  }

  get pubkey(): string {
    return this.o.identity.pubkeyHex;
  }

  /** Loads the store into the graph, then listens to peers. */
  start(): void {
    for (const { outpoint, direction, result } of this.store.loadHistory())
      this.history.load(outpoint, direction, result);
    for (const { cursor, message } of this.store.all()) this.applyToGraph(message, cursorTimestamp(cursor));
    this.sync.resume();
    const peers = this.o.peers;
    if (peers) {
      this.unsubscribe = peers.onGossip((pk, payload) => this.onGossip(pk, payload));
      const onConnected = (p: { pubkey: string }) => this.sync.startPeer(p.pubkey);
      const onProtocol = (pk: string, id: number) => {
        if (id === 43) this.sync.startPeer(pk);
      };
      const onDisconnected = (p: { pubkey: string }) => this.sync.dropPeer(p.pubkey);
      peers.on('connected', onConnected);
      peers.on('protocol', onProtocol);
      peers.on('disconnected', onDisconnected);
      this.listeners.push(
        ['connected', onConnected],
        ['protocol', onProtocol],
        ['disconnected', onDisconnected],
      );
      for (const p of peers.list()) if (p.init) this.sync.startPeer(p.pubkey);
    }
    if (this.o.timers !== false) {
      this.pruneTimer = setInterval(() => this.prune(), 86_400_000);
      this.pruneTimer.unref();
    }
  }

  async stop(): Promise<void> {
    this.historyWriter.flush();
    this.sync.stop();
    this.unsubscribe?.();
    for (const [e, l] of this.listeners) this.o.peers?.off(e, l);
    clearInterval(this.pruneTimer);
    clearInterval(this.announceTimer);
    await this.queue.catch(() => {});
  }

  // ---- routing API ----

  /**
   * Path-finding (see `findPath`) with this node's graph and payment history; `source` defaults
   * to this node. From this node with an amount, the reference's pre-check runs first: the best
   * direct outbound liquidity (the sum, for MPP) must cover the amount (`Insufficient balance: …`).
   */
  findRoute(req: Omit<FindRouteRequest, 'source'> & { source?: string }): RouterHop[] {
    const source = req.source ?? this.pubkey;
    const udt = normaliseUdtKey(req.udt);
    if (source === this.pubkey && req.amount !== null && source !== req.target) {
      checkOutboundLiquidity(this.graph, source, req.amount, udt, !!req.allowMpp);
    }
    return findPath(this.graph, { history: this.history, now: this.now(), ...req, udt, source });
  }

  /**
   * MPP: a route for `amount`, or for the largest part down to `lowBound` one route carries (see
   * `findPathInRange`), after the same liquidity pre-check as `findRoute`.
   */
  findRouteInRange(
    req: Omit<FindRouteRequest, 'source' | 'amount'> & { source?: string; amount: bigint },
    lowBound: bigint | null,
  ): { route: RouterHop[]; amount: bigint } {
    const source = req.source ?? this.pubkey;
    const udt = normaliseUdtKey(req.udt);
    if (source === this.pubkey && source !== req.target) {
      checkOutboundLiquidity(this.graph, source, req.amount, udt, !!req.allowMpp);
    }
    return findPathInRange(
      this.graph,
      { history: this.history, now: this.now(), ...req, udt, source },
      lowBound,
    );
  }

  /** The amount the widest route to the target carries (MPP part sizing). */
  maxRoutableAmount(req: Omit<FindRouteRequest, 'source' | 'amount'> & { source?: string }): bigint {
    return maxRoutableAmount(this.graph, {
      history: this.history,
      now: this.now(),
      ...req,
      udt: normaliseUdtKey(req.udt),
      source: req.source ?? this.pubkey,
    });
  }

  /** A route through explicit hops (`build_router`); `source` defaults to this node. */
  buildRoute(req: Omit<BuildPathRequest, 'source'> & { source?: string }): RouterHop[] {
    return buildPath(this.graph, {
      history: this.history,
      now: this.now(),
      ...req,
      udt: normaliseUdtKey(req.udt),
      source: req.source ?? this.pubkey,
    });
  }

  /**
   * Announces this node now and every `intervalMs` (fnn `announce_node_interval_seconds`); the
   * options are read again at each announcement.
   */
  startAnnouncing(opts: () => NodeAnnouncementOptions, intervalMs: number): void {
    const announce = () => {
      try {
        this.announceNode(opts());
      } catch (e) {
        this.log.warn({ err: (e as Error).message }, 'graph: node announcement failed');
      }
    };
    announce();
    clearInterval(this.announceTimer);
    if (intervalMs > 0) {
      this.announceTimer = setInterval(announce, intervalMs);
      this.announceTimer.unref();
    }
  }

  /** After an attempt succeeded: every pair of its route is credited (`record_attempt_success`). */
  recordPaymentSuccess(nodes: SessionRouteNode[]): void {
    applyAttemptResult(this.history, judgeSuccess(nodes), this.failedNodeChannels, this.now());
  }

  /**
   * After an attempt failed with a decoded TlcErr (`update_graph_with_tlc_fail`, then
   * `record_payment_fail`): an attached channel update is verified and applied like gossip;
   * PermanentChannelFailure / ChannelDisabled / UnknownNextPeer disable the failed channel,
   * PermanentNodeFailure every direction into the node; the route's pairs are penalised or
   * credited per the reference's table. Resolves to whether the payment may retry.
   */
  async recordPaymentFailure(nodes: SessionRouteNode[], error: PaymentFailure): Promise<boolean> {
    if (error.channelUpdate && (TLC_UPDATE_CODES.has(error.code) || error.updateFlag)) {
      await this.processBroadcast({ type: 'ChannelUpdate', value: error.channelUpdate });
    }
    if (
      (error.code === 'PermanentChannelFailure' ||
        error.code === 'ChannelDisabled' ||
        error.code === 'UnknownNextPeer') &&
      error.channelOutpoint
    ) {
      this.graph.markChannelFailed(error.channelOutpoint);
    }
    if (error.code === 'PermanentNodeFailure' && error.nodeId) this.graph.markNodeFailed(error.nodeId);
    const { result, retry } = judgeFailure(nodes, error.nodeId, error.code);
    applyAttemptResult(this.history, result, this.failedNodeChannels, this.now());
    return retry;
  }

  // ---- the node's own channels (fed by the channel layer) ----

  /**
   * One of this node's channels is usable (ready, peer reachable), or changed as a whole
   * (`OwnedChannelUpdateEvent::Up`): replaces it in the graph with both policies and the exact
   * outbound liquidity; clears its payment history. Private channels belong here too (they are
   * routable from this node, never gossiped).
   */
  ownChannelUp(c: Parameters<NetworkGraph['upsertOwnChannel']>[0]): void {
    const existing = this.graph.channel(c.outpoint);
    // Repeating the same state is cheap and keeps the history (callers may sync before each search).
    if (existing?.own && sameOwnChannel(existing, c, this.pubkey)) return;
    if (!existing?.own) this.history.removeChannel(c.outpoint);
    this.graph.upsertOwnChannel(c);
  }

  /** One direction of an own channel changed: balance after a TLC settles, fee, enabled (`Updated`). */
  ownChannelUpdated(outpoint: string, node: string, info: ChannelUpdateInfo): void {
    this.graph.updateOwnChannel(outpoint, node, info);
  }

  /** An own channel closed or its peer went away (`Down`). */
  ownChannelDown(outpoint: string): void {
    if (!this.graph.channel(outpoint)) return;
    this.graph.removeChannel(outpoint);
  }

  // ---- own messages ----

  /** Signs, stores and broadcasts this node's announcement. */
  announceNode(opts: NodeAnnouncementOptions): NodeAnnouncement {
    const name = new Uint8Array(32);
    const nameBytes = new TextEncoder().encode(opts.nodeName ?? '');
    if (nameBytes.length > 32)
      throw new GraphError('NodeNameTooLong', `node name '${opts.nodeName}' is longer than 32 bytes`);
    name.set(nameBytes);
    const previous = this.graph.node(this.pubkey)?.announcement.timestamp ?? 0n;
    let ts = BigInt(this.now());
    if (ts <= previous) ts = previous + 1n;
    const ann = signNodeAnnouncement(
      {
        features: opts.features ?? Uint8Array.of(0x15),
        timestamp: ts,
        nodeId: hexBytes(this.pubkey),
        version: new TextEncoder().encode(opts.version ?? ''),
        nodeName: name,
        addresses: (opts.addresses ?? []).map((a) => multiaddr(a).bytes),
        chainHash: this.o.chainHash,
        autoAcceptMinCkbFundingAmount: opts.autoAcceptMinCkbFundingAmount ?? 0n,
        udtCfgInfos: opts.udtCfgInfos ?? [],
      },
      this.o.identity.secretKey,
    );
    this.accept({ type: 'NodeAnnouncement', value: ann }, ann.timestamp);
    return ann;
  }

  /**
   * Signs a ChannelUpdate of one of this node's public channels with the reference's timestamp
   * rule (even for node1, odd for node2) and broadcasts it.
   */
  async broadcastOwnChannelUpdate(
    u: Omit<ChannelUpdate, 'signature' | 'timestamp' | 'chainHash' | 'messageFlags'> & {
      peer: string;
    },
  ): Promise<ChannelUpdate> {
    const isNode2 = this.pubkey > u.peer;
    let ts = BigInt(this.now());
    if ((ts & 1n) !== (isNode2 ? 1n : 0n)) ts += 1n;
    const { peer: _peer, ...fields } = u;
    const signed = signChannelUpdate(
      { ...fields, timestamp: ts, chainHash: this.o.chainHash, messageFlags: isNode2 ? 1 : 0 },
      this.o.identity.secretKey,
    );
    await this.processBroadcast({ type: 'ChannelUpdate', value: signed });
    return signed;
  }

  /** Verifies, stores, applies and relays messages built locally (e.g. a channel announcement). */
  processBroadcast(m: BroadcastMessage, from?: string): Promise<GossipOutcome> {
    const run = this.queue.then(() => this.verifyAndAccept(m, from));
    this.queue = run.catch(() => {});
    return run;
  }

  // ---- RPC listings (stored announcements in cursor order, as the reference) ----

  listNodes(limit: number, after: Uint8Array): { nodes: NodeAnnouncement[]; lastCursor: Uint8Array | null } {
    const rows = this.store.after(after, Math.min(limit, 1_000_000), CURSOR_TYPE.NodeAnnouncement);
    const nodes = rows.flatMap((r) => (r.message.type === 'NodeAnnouncement' ? [r.message.value] : []));
    return { nodes, lastCursor: rows[rows.length - 1]?.cursor ?? null };
  }

  listChannels(
    limit: number,
    after: Uint8Array,
  ): { channels: ListedChannel[]; lastCursor: Uint8Array | null } {
    const channels: ListedChannel[] = [];
    let cursor = after;
    let lastCursor: Uint8Array | null = null;
    const want = Math.min(limit, 1_000_000);
    while (channels.length < want) {
      const rows = this.store.after(cursor, want - channels.length, CURSOR_TYPE.ChannelAnnouncement);
      if (rows.length === 0) break;
      for (const r of rows) {
        cursor = r.cursor;
        if (r.message.type !== 'ChannelAnnouncement') continue;
        const op = outpointHex(r.message.value.channelOutpoint);
        const cu = (side: 1 | 2) => {
          const m = this.store.get(`cu:${op}:${side}`)?.message;
          return m?.type === 'ChannelUpdate' ? m.value : null;
        };
        const update1 = cu(1);
        const update2 = cu(2);
        const closed =
          !!update1 && !!update2 && (update1.channelFlags & 1) === 1 && (update2.channelFlags & 1) === 1;
        if (closed) continue;
        channels.push({
          announcement: r.message.value,
          createdTimestamp: cursorTimestamp(r.cursor),
          update1,
          update2,
        });
        lastCursor = r.cursor;
      }
    }
    return { channels, lastCursor };
  }

  // ---- maintenance ----

  /** Drops channels not refreshed for 28 days (graph and store). */
  prune(): string[] {
    const before = BigInt(this.now()) - PRUNE_AFTER;
    const dropped = this.graph.pruneStale(before);
    this.store.transaction(() => {
      for (const op of dropped) {
        this.store.delete(`ca:${op}`);
        this.store.delete(`cu:${op}:1`);
        this.store.delete(`cu:${op}:2`);
        this.history.removeChannel(op);
      }
    });
    if (dropped.length) this.log.info({ count: dropped.length }, 'graph pruned stale channels');
    return dropped;
  }

  // ---- gossip input ----

  private onGossip(pubkey: string, payload: Uint8Array): Promise<void> {
    let msg: GossipMessage;
    try {
      msg = decodeGossipMessage(payload);
    } catch (e) {
      // Bytes that are no GossipMessage end the session, as a malformed FiberMessage does: a peer
      // that speaks garbage must not keep its place.
      this.log.warn({ pubkey, err: (e as Error).message }, 'malformed gossip message: session closed');
      this.o.peers?.drop(pubkey, `malformed gossip message: ${(e as Error).message}`);
      return Promise.resolve();
    }
    const run = this.queue.then(() => this.sync.handle(pubkey, msg));
    this.queue = run.catch((e) =>
      this.log.warn({ pubkey, err: (e as Error).message }, 'gossip: handler failed'),
    );
    return this.queue as Promise<void>;
  }

  private async verifyAndAccept(m: BroadcastMessage, from?: string): Promise<GossipOutcome> {
    try {
      return await this.verifyAndAcceptInner(m, from);
    } catch (e) {
      this.log.warn({ from, type: m.type, err: (e as Error).message }, 'gossip: message rejected');
      return 'rejected';
    }
  }

  private async verifyAndAcceptInner(m: BroadcastMessage, from?: string): Promise<GossipOutcome> {
    const v = m.value;
    if (!equalBytes(v.chainHash, this.o.chainHash)) return 'rejected';
    const nowTs = BigInt(this.now());
    if (m.type !== 'ChannelAnnouncement' && m.value.timestamp > nowTs + MAX_CLOCK_SKEW) return 'rejected';
    const existing = this.store.get(messageKey(m));
    if (m.type === 'ChannelAnnouncement') {
      if (existing) return sameMessage(existing.message, m) ? 'duplicate' : 'stale';
      const a = m.value;
      if (equalBytes(a.node1Id, a.node2Id) || !verifyChannelAnnouncement(a)) return 'rejected';
      if (!this.o.funding) return 'rejected';
      const ts = await this.o.funding.check(a);
      this.accept(m, ts, from);
      this.releaseHeld(outpointHex(a.channelOutpoint));
      return 'accepted';
    }
    const cursor = cursorOf(m, 0n)!;
    if (existing) {
      if (sameMessage(existing.message, m)) return 'duplicate';
      if (compareBytes(existing.cursor, cursor) >= 0) return 'stale';
    }
    if (m.type === 'NodeAnnouncement') {
      if (!verifyNodeAnnouncement(m.value)) return 'rejected';
      if (!this.o.announcePrivateAddr && !hasPublicAddress(m.value.addresses)) return 'rejected';
      this.accept(m, m.value.timestamp, from);
      return 'accepted';
    }
    const u = m.value;
    const ca = this.store.get(`ca:${outpointHex(u.channelOutpoint)}`);
    if (ca?.message.type !== 'ChannelAnnouncement') {
      this.hold(u, from);
      return 'held';
    }
    if (!verifyChannelUpdate(u, ca.message.value.node1Id, ca.message.value.node2Id)) return 'rejected';
    this.accept(m, u.timestamp, from);
    return 'accepted';
  }

  /** Stores, applies to the graph and relays an accepted message. */
  private accept(m: BroadcastMessage, timestamp: bigint, from?: string): void {
    const cursor = cursorOf(m, timestamp)!;
    this.store.put(cursor, m);
    this.sync.learnt(timestamp, from);
    this.applyToGraph(m, timestamp);
    this.sync.relay(m, from);
  }

  private applyToGraph(m: BroadcastMessage, timestamp: bigint): void {
    if (m.type === 'NodeAnnouncement') this.graph.applyNodeAnnouncement(m.value);
    else if (m.type === 'ChannelAnnouncement') this.graph.applyChannelAnnouncement(m.value, timestamp);
    else if (this.graph.applyChannelUpdate(m.value) === 'applied') {
      const c = this.graph.channel(outpointHex(m.value.channelOutpoint))!;
      const ofNode2 = (m.value.messageFlags & 1) === 1;
      const d = ofNode2 ? directionOf(c.node2, c.node1) : directionOf(c.node1, c.node2);
      this.history.processChannelUpdate(c.outpoint, d, (m.value.channelFlags & 1) === 1);
    }
  }

  private hold(u: ChannelUpdate, from?: string): void {
    const key = outpointHex(u.channelOutpoint);
    let total = 0;
    for (const l of this.held.values()) total += l.length;
    if (total >= MAX_HELD_UPDATES) return;
    const list = this.held.get(key) ?? [];
    const isNew = list.length === 0;
    list.push({ update: u, from });
    this.held.set(key, list);
    if (isNew && from) this.sync.query(from, [{ channelOutpoint: u.channelOutpoint, flags: 0 }]);
  }

  private releaseHeld(outpoint: string): void {
    const list = this.held.get(outpoint);
    if (!list) return;
    this.held.delete(outpoint);
    for (const h of list) {
      // Runs after the current message, in the same queue.
      void this.processBroadcast({ type: 'ChannelUpdate', value: h.update }, h.from);
    }
  }

  /** max(latest remote − 2 h, now − 14 d), type 0, zero id (`get_safe_cursor_to_start_syncing`). */
  startCursor(): Uint8Array {
    return this.sync.startCursor();
  }
}

export function createGraphService(o: GraphServiceOptions): GraphService {
  return new GraphService(o);
}

function hexBytes(h: string): Uint8Array {
  return new Uint8Array(Buffer.from(h.replace(/^0x/, ''), 'hex'));
}

export { pubkeyHex };
