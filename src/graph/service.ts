/**
 * The graph service: gossip over /p2p/43 (`docs/reference/fiber-routing-protocol.md` §3),
 * the persisted message store, the network graph and payment history, and the path-finding entry
 * the payment layer calls.
 *
 * Sync, as the reference: with up to 3 peers an active pull (`GetBroadcastMessages` from a start
 * cursor, repeated after the last cursor until an empty answer), then a passive subscription
 * (`BroadcastMessagesFilter`) on up to 3 outbound peers, and subscribing back to peers that
 * subscribe to us; subscribers get the stored messages after their cursor, then every new one.
 * An update whose channel announcement is unknown is held and the announcement is queried from
 * the sender (`QueryBroadcastMessages`). Every message is verified (chain hash, clock skew,
 * signatures, funding on chain) before it is stored, applied and relayed; messages are processed
 * one at a time through a queue. Deliberate difference: messages are verified and saved as they
 * arrive rather than on the reference's 20-second store tick.
 */
import { isIP } from 'node:net';
import { multiaddr } from '@multiformats/multiaddr';
import { bytesToHex, compareBytes, equalBytes } from '../codec/index.ts';
import type { Db } from '../store/index.ts';
import { CURSOR_TYPE, type CursorType, cursorTimestamp, makeCursor, ZERO_CURSOR } from './cursor.ts';
import { GraphError } from './errors.ts';
import type { FundingChecker } from './funding.ts';
import {
  applyAttemptResult,
  directionOf,
  judgeFailure,
  judgeSuccess,
  PaymentHistory,
  type SessionRouteNode,
} from './history.ts';
import {
  type BroadcastMessage,
  type ChannelAnnouncement,
  type ChannelUpdate,
  decodeGossipMessage,
  encodeGossipMessage,
  encodeOutPoint,
  type GossipMessage,
  type NodeAnnouncement,
  type OutPoint,
  type UdtArgInfo,
} from './messages.ts';
import {
  type ChannelInfo,
  type ChannelUpdateInfo,
  NetworkGraph,
  normaliseUdtKey,
  outpointHex,
  pubkeyHex,
  udtKey,
} from './network-graph.ts';
import {
  type BuildPathRequest,
  buildPath,
  checkOutboundLiquidity,
  type FindRouteRequest,
  findPath,
  findPathInRange,
  maxRoutableAmount,
  type RouterHop,
} from './pathfind.ts';
import {
  signChannelUpdate,
  signNodeAnnouncement,
  verifyChannelAnnouncement,
  verifyChannelUpdate,
  verifyNodeAnnouncement,
} from './signing.ts';
import { GraphStore, messageKey } from './store.ts';

const TWO_HOURS = 2n * 3_600_000n;
const FOURTEEN_DAYS = 14n * 86_400_000n;
const PRUNE_AFTER = 28n * 86_400_000n;
const MAX_CLOCK_SKEW = 60_000n;
const MAX_SYNC_PEERS = 3;
const MAX_SUBSCRIPTIONS = 3;
const PAGE = 100;
const MAX_BATCH = 1000;
const REQUEST_TIMEOUT_MS = 20_000;
/** Updates waiting for their channel announcement, at most this many. */
const MAX_HELD_UPDATES = 1000;
const NO_SUBSCRIPTION = 0xffff_ffff_ffff_ffffn;

/** The part of the PeerManager the graph uses. */
export interface GossipPeers {
  onGossip(handler: (pubkey: string, payload: Uint8Array) => void | Promise<void>): () => void;
  sendGossip(pubkey: string, payload: Uint8Array): void;
  /** Closes the session with a peer that broke the protocol. */
  drop(pubkey: string, reason: string): void;
  list(): { pubkey: string; outbound: boolean; init?: unknown }[];
  on(event: 'connected', listener: (p: { pubkey: string; outbound: boolean }) => void): unknown;
  on(event: 'disconnected', listener: (p: { pubkey: string }, reason: string) => void): unknown;
  on(event: 'protocol', listener: (pubkey: string, protocolId: number) => void): unknown;
  off(event: string, listener: (...args: never[]) => void): unknown;
}

export interface GraphLogger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
}

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

interface PeerSync {
  /** Active pull state. */
  requestId?: bigint;
  /** The cursor the outstanding pull asked after: answers must move past it. */
  after?: Uint8Array;
  timer?: NodeJS.Timeout;
  pulled?: boolean;
  /** We are subscribed to this peer. */
  subscribed?: boolean;
  /** This peer subscribed to us (its cursor while catching up is not needed: we push new ones). */
  subscriber?: boolean;
  /** Outstanding targeted queries by id. */
  queries?: Set<bigint>;
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

export type GossipOutcome = 'accepted' | 'duplicate' | 'stale' | 'held' | 'rejected';

export class GraphService {
  readonly graph: NetworkGraph;
  readonly history: PaymentHistory;
  readonly store: GraphStore;
  private readonly log: GraphLogger;
  private readonly now: () => number;
  private readonly peerState = new Map<string, PeerSync>();
  /** Channels seen per node in attempt results (the reference's `nodes_to_channel_map`). */
  private readonly failedNodeChannels = new Map<string, Set<string>>();
  private readonly held = new Map<string, { update: ChannelUpdate; from?: string }[]>();
  private queue: Promise<unknown> = Promise.resolve();
  private nextId = 1n;
  /** Newest cursor time of a message learnt from peers (not our own): where syncing resumes. */
  private latestRemoteTimestamp = 0n;
  private unsubscribe?: () => void;
  private readonly listeners: [string, (...a: never[]) => void][] = [];
  private pruneTimer?: NodeJS.Timeout;
  private announceTimer?: NodeJS.Timeout;
  private stopped = false;

  constructor(private readonly o: GraphServiceOptions) {
    this.log = o.logger ?? SILENT;
    this.now = o.now ?? Date.now;
    this.store = new GraphStore(o.db);
    this.graph = new NetworkGraph(o.identity.pubkeyHex);
    this.history = new PaymentHistory((op, d, r) => this.store.saveHistory(op, d, r));
  }

  get pubkey(): string {
    return this.o.identity.pubkeyHex;
  }

  /** Loads the store into the graph, then listens to peers. */
  start(): void {
    for (const { outpoint, direction, result } of this.store.loadHistory())
      this.history.load(outpoint, direction, result);
    for (const { cursor, message } of this.store.all()) this.applyToGraph(message, cursorTimestamp(cursor));
    // As the reference: the newest of the last 100 stored messages that is not about this node.
    const remote = this.store.newest(100).find((m) => this.isRemoteCandidate(m.message));
    this.latestRemoteTimestamp = remote ? cursorTimestamp(remote.cursor) : 0n;
    const peers = this.o.peers;
    if (peers) {
      this.unsubscribe = peers.onGossip((pk, payload) => this.onGossip(pk, payload));
      const onConnected = (p: { pubkey: string }) => this.startPeer(p.pubkey);
      const onProtocol = (pk: string, id: number) => {
        if (id === 43) this.startPeer(pk);
      };
      const onDisconnected = (p: { pubkey: string }) => this.dropPeer(p.pubkey);
      peers.on('connected', onConnected);
      peers.on('protocol', onProtocol);
      peers.on('disconnected', onDisconnected);
      this.listeners.push(
        ['connected', onConnected],
        ['protocol', onProtocol],
        ['disconnected', onDisconnected],
      );
      for (const p of peers.list()) if (p.init) this.startPeer(p.pubkey);
    }
    if (this.o.timers !== false) {
      this.pruneTimer = setInterval(() => this.prune(), 86_400_000);
      this.pruneTimer.unref();
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    for (const [e, l] of this.listeners) this.o.peers?.off(e, l);
    clearInterval(this.pruneTimer);
    clearInterval(this.announceTimer);
    for (const s of this.peerState.values()) clearTimeout(s.timer);
    this.peerState.clear();
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
  ): {
    channels: {
      announcement: ChannelAnnouncement;
      createdTimestamp: bigint;
      update1: ChannelUpdate | null;
      update2: ChannelUpdate | null;
    }[];
    lastCursor: Uint8Array | null;
  } {
    const channels: ReturnType<GraphService['listChannels']>['channels'] = [];
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
    const run = this.queue.then(() => this.handle(pubkey, msg));
    this.queue = run.catch((e) =>
      this.log.warn({ pubkey, err: (e as Error).message }, 'gossip: handler failed'),
    );
    return this.queue as Promise<void>;
  }

  private async handle(pubkey: string, msg: GossipMessage): Promise<void> {
    if (this.stopped) return;
    const chainOk = (c: Uint8Array) => equalBytes(c, this.o.chainHash);
    switch (msg.type) {
      case 'BroadcastMessagesFilter': {
        if (!chainOk(msg.chainHash)) return;
        const st = this.state(pubkey);
        if (cursorTimestamp(msg.afterCursor) === NO_SUBSCRIPTION) {
          st.subscriber = false;
          return;
        }
        st.subscriber = true;
        for (let after = msg.afterCursor; ; ) {
          const batch = this.store.after(after, MAX_BATCH);
          if (batch.length === 0) break;
          this.send(pubkey, { type: 'BroadcastMessagesFilterResult', messages: batch.map((b) => b.message) });
          after = batch[batch.length - 1]!.cursor;
          if (batch.length < MAX_BATCH) break;
        }
        this.subscribe(pubkey); // subscribe back
        return;
      }
      case 'GetBroadcastMessages': {
        if (!chainOk(msg.chainHash) || msg.count < 1 || msg.count > MAX_BATCH) return;
        const batch = this.store.after(msg.afterCursor, msg.count);
        this.send(pubkey, {
          type: 'GetBroadcastMessagesResult',
          id: msg.id,
          messages: batch.map((b) => b.message),
        });
        return;
      }
      case 'QueryBroadcastMessages': {
        if (!chainOk(msg.chainHash) || msg.queries.length > MAX_BATCH) return;
        const messages: BroadcastMessage[] = [];
        const missing: number[] = [];
        msg.queries.forEach((q, i) => {
          const found = this.lookup(q.channelOutpoint, q.flags);
          if (found) messages.push(found);
          else missing.push(i);
        });
        this.send(pubkey, {
          type: 'QueryBroadcastMessagesResult',
          id: msg.id,
          messages,
          missingQueries: missing,
        });
        return;
      }
      case 'BroadcastMessagesFilterResult':
        await this.acceptBatch(msg.messages, pubkey);
        return;
      case 'QueryBroadcastMessagesResult':
        this.state(pubkey).queries?.delete(msg.id);
        await this.acceptBatch(msg.messages, pubkey);
        return;
      case 'GetBroadcastMessagesResult': {
        const st = this.state(pubkey);
        if (st.requestId !== msg.id) return;
        clearTimeout(st.timer);
        const last = await this.acceptBatch(msg.messages, pubkey);
        // An answer that does not move past the cursor asked for would loop forever: stop there.
        const stuck = last !== null && st.after !== undefined && compareBytes(last, st.after) <= 0;
        if (msg.messages.length === 0 || last === null || stuck) {
          st.requestId = undefined;
          st.pulled = true;
          this.log.debug({ pubkey }, 'gossip: active sync finished');
          this.maybeSubscribe(pubkey);
          return;
        }
        this.pull(pubkey, last);
        return;
      }
    }
  }

  /** Accepts a batch in the reference's verification order (NA, CA, CU); returns the last cursor. */
  private async acceptBatch(messages: BroadcastMessage[], from: string): Promise<Uint8Array | null> {
    const order = { NodeAnnouncement: 0, ChannelAnnouncement: 1, ChannelUpdate: 2 } as const;
    let last: Uint8Array | null = null;
    for (const m of [...messages].sort((a, b) => order[a.type] - order[b.type])) {
      await this.verifyAndAccept(m, from);
    }
    // The next pull starts after the last message as the peer sent them (its cursor order).
    const tail = messages[messages.length - 1];
    if (tail) last = this.cursorOfKnown(tail);
    return last;
  }

  /** Not about this node: another node's announcement, a channel neither end of which is us. */
  private isRemoteCandidate(m: BroadcastMessage): boolean {
    const me = this.pubkey;
    const isMe = (k: Uint8Array) => pubkeyHex(k) === me;
    if (m.type === 'NodeAnnouncement') return !isMe(m.value.nodeId);
    const ca =
      m.type === 'ChannelAnnouncement'
        ? m.value
        : this.store.get(`ca:${outpointHex(m.value.channelOutpoint)}`)?.message.value;
    if (!ca || !('node1Id' in ca)) return false;
    return !isMe(ca.node1Id) && !isMe(ca.node2Id);
  }

  private cursorOfKnown(m: BroadcastMessage): Uint8Array | null {
    if (m.type !== 'ChannelAnnouncement') return cursorOf(m, 0n);
    const stored = this.store.get(messageKey(m));
    return stored?.cursor ?? null;
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
    if (from !== undefined && timestamp > this.latestRemoteTimestamp) this.latestRemoteTimestamp = timestamp;
    this.applyToGraph(m, timestamp);
    const payload = encodeGossipMessage({ type: 'BroadcastMessagesFilterResult', messages: [m] });
    for (const [pk, st] of this.peerState) {
      if (pk === from || !st.subscriber) continue;
      this.sendRaw(pk, payload);
    }
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
    if (isNew && from) this.query(from, [{ channelOutpoint: u.channelOutpoint, flags: 0 }]);
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

  /** A stored message for a query (`flags` is an enum: 0 CA, 1/2 CU of node1/2, 4/8 NA of node1/2). */
  private lookup(o: OutPoint, flags: number): BroadcastMessage | null {
    const op = bytesToHex(encodeOutPoint(o));
    const ca = this.store.get(`ca:${op}`)?.message;
    const key =
      flags === 0
        ? `ca:${op}`
        : flags === 1
          ? `cu:${op}:1`
          : flags === 2
            ? `cu:${op}:2`
            : (flags === 4 || flags === 8) && ca?.type === 'ChannelAnnouncement'
              ? `na:${bytesToHex(flags === 4 ? ca.value.node1Id : ca.value.node2Id, false)}`
              : null;
    return key ? (this.store.get(key)?.message ?? null) : null;
  }

  // ---- sync with peers ----

  private state(pubkey: string): PeerSync {
    let st = this.peerState.get(pubkey);
    if (!st) {
      st = {};
      this.peerState.set(pubkey, st);
    }
    return st;
  }

  private startPeer(pubkey: string): void {
    if (this.stopped) return;
    const st = this.state(pubkey);
    if (st.requestId !== undefined || st.pulled) return;
    const active = [...this.peerState.values()].filter((s) => s.requestId !== undefined || s.pulled).length;
    if (active >= MAX_SYNC_PEERS) {
      this.maybeSubscribe(pubkey);
      return;
    }
    this.pull(pubkey, this.startCursor());
  }

  private pull(pubkey: string, after: Uint8Array): void {
    const st = this.state(pubkey);
    const id = this.nextId++;
    st.requestId = id;
    st.after = after;
    const ok = this.send(pubkey, {
      type: 'GetBroadcastMessages',
      id,
      chainHash: this.o.chainHash,
      afterCursor: after,
      count: PAGE,
    });
    if (!ok) {
      st.requestId = undefined; // /p2p/43 not open yet: the 'protocol' event retries
      return;
    }
    clearTimeout(st.timer);
    st.timer = setTimeout(() => {
      if (st.requestId !== id) return;
      this.log.warn({ pubkey }, 'gossip: sync request timed out');
      st.requestId = undefined;
      st.pulled = true;
      this.maybeSubscribe(pubkey);
    }, REQUEST_TIMEOUT_MS);
    st.timer.unref();
  }

  private maybeSubscribe(pubkey: string): void {
    const peer = this.o.peers?.list().find((p) => p.pubkey === pubkey);
    if (!peer?.outbound) return;
    const subscribed = [...this.peerState.values()].filter((s) => s.subscribed).length;
    if (subscribed >= MAX_SUBSCRIPTIONS) return;
    this.subscribe(pubkey);
  }

  private subscribe(pubkey: string): void {
    const st = this.state(pubkey);
    if (st.subscribed) return;
    if (
      this.send(pubkey, {
        type: 'BroadcastMessagesFilter',
        chainHash: this.o.chainHash,
        afterCursor: this.startCursor(),
      })
    )
      st.subscribed = true;
  }

  private query(pubkey: string, queries: { channelOutpoint: OutPoint; flags: number }[]): void {
    const id = this.nextId++;
    const st = this.state(pubkey);
    st.queries ??= new Set();
    st.queries.add(id);
    this.send(pubkey, { type: 'QueryBroadcastMessages', id, chainHash: this.o.chainHash, queries });
  }

  private dropPeer(pubkey: string): void {
    const st = this.peerState.get(pubkey);
    if (st) clearTimeout(st.timer);
    this.peerState.delete(pubkey);
  }

  /** max(latest remote − 2 h, now − 14 d), type 0, zero id (`get_safe_cursor_to_start_syncing`). */
  startCursor(): Uint8Array {
    const floor = BigInt(this.now()) - FOURTEEN_DAYS;
    const back = this.latestRemoteTimestamp > TWO_HOURS ? this.latestRemoteTimestamp - TWO_HOURS : 0n;
    const t = back > floor ? back : floor;
    return t > 0n ? makeCursor(t, CURSOR_TYPE.ChannelAnnouncement, new Uint8Array(36)) : ZERO_CURSOR;
  }

  private send(pubkey: string, m: GossipMessage): boolean {
    return this.sendRaw(pubkey, encodeGossipMessage(m));
  }

  private sendRaw(pubkey: string, payload: Uint8Array): boolean {
    try {
      this.o.peers?.sendGossip(pubkey, payload);
      return !!this.o.peers;
    } catch (e) {
      this.log.debug({ pubkey, err: (e as Error).message }, 'gossip: send failed');
      return false;
    }
  }
}

export function createGraphService(o: GraphServiceOptions): GraphService {
  return new GraphService(o);
}

/** The cursor of a message; a channel announcement takes the funding block's timestamp. */
export function cursorOf(m: BroadcastMessage, caTimestamp: bigint): Uint8Array | null {
  let type: CursorType;
  let id: Uint8Array;
  let ts: bigint;
  if (m.type === 'ChannelAnnouncement') {
    type = CURSOR_TYPE.ChannelAnnouncement;
    id = encodeOutPoint(m.value.channelOutpoint);
    ts = caTimestamp;
  } else if (m.type === 'ChannelUpdate') {
    type = CURSOR_TYPE.ChannelUpdate;
    id = encodeOutPoint(m.value.channelOutpoint);
    ts = m.value.timestamp;
  } else {
    type = CURSOR_TYPE.NodeAnnouncement;
    id = m.value.nodeId;
    ts = m.value.timestamp;
  }
  return makeCursor(ts, type, id);
}

function sameOwnChannel(
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

function sameMessage(a: BroadcastMessage, b: BroadcastMessage): boolean {
  return (
    a.type === b.type &&
    equalBytes(
      encodeGossipMessage({ type: 'BroadcastMessagesFilterResult', messages: [a] }),
      encodeGossipMessage({ type: 'BroadcastMessagesFilterResult', messages: [b] }),
    )
  );
}

function hexBytes(h: string): Uint8Array {
  return new Uint8Array(Buffer.from(h.replace(/^0x/, ''), 'hex'));
}

/** Whether any announced address is public (not loopback, private, link-local or unspecified). */
export function hasPublicAddress(addresses: Uint8Array[]): boolean {
  for (const raw of addresses) {
    let text: string;
    try {
      text = multiaddr(raw).toString();
    } catch {
      continue;
    }
    const parts = text.split('/');
    const proto = parts[1];
    const host = parts[2] ?? '';
    if (proto === 'dns' || proto === 'dns4' || proto === 'dns6') {
      if (host !== 'localhost') return true;
      continue;
    }
    if ((proto === 'ip4' || proto === 'ip6') && isIP(host) && !isPrivateIp(host)) return true;
  }
  return false;
}

function isPrivateIp(ip: string): boolean {
  if (isIP(ip) === 4) {
    const [a, b] = ip.split('.').map(Number) as [number, number];
    return (
      a === 0 ||
      a === 10 ||
      a === 127 ||
      (a === 169 && b === 254) ||
      (a === 172 && b >= 16 && b <= 31) ||
      (a === 192 && b === 168)
    );
  }
  const l = ip.toLowerCase();
  return l === '::' || l === '::1' || l.startsWith('fc') || l.startsWith('fd') || l.startsWith('fe80');
}

export { pubkeyHex };
