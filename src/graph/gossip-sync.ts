/**
 * Gossip sync with peers over /p2p/43 (`docs/reference/fiber-routing-protocol.md` §3), the graph
 * service's peer side. What a message is worth (verification, storing, the graph) is the
 * service's: every message received goes to `GossipSyncOptions.verifyAndAccept`.
 *
 * Sync, as the reference: with up to 3 peers an active pull (`GetBroadcastMessages` from a start
 * cursor, repeated after the last cursor until an empty answer), then a passive subscription
 * (`BroadcastMessagesFilter`) on up to 3 outbound peers, and subscribing back to peers that
 * subscribe to us; subscribers get the stored messages after their cursor, then every new one.
 * Updates held for an unknown channel announcement query it from their sender
 * (`QueryBroadcastMessages`).
 */
import { bytesToHex, compareBytes, equalBytes } from '../codec/index.ts';
import { cursorOf } from './broadcast.ts';
import { CURSOR_TYPE, cursorTimestamp, makeCursor, ZERO_CURSOR } from './cursor.ts';
import {
  type BroadcastMessage,
  encodeGossipMessage,
  encodeOutPoint,
  type GossipMessage,
  type OutPoint,
} from './messages.ts';
import { outpointHex, pubkeyHex } from './network-graph.ts';
import { type GraphStore, messageKey } from './store.ts';

const TWO_HOURS = 2n * 3_600_000n;
const FOURTEEN_DAYS = 14n * 86_400_000n;
const MAX_SYNC_PEERS = 3;
const MAX_SUBSCRIPTIONS = 3;
const PAGE = 100;
const MAX_BATCH = 1000;
const REQUEST_TIMEOUT_MS = 20_000;
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

/** What the sync reads of the graph service. */
export interface GossipSyncOptions {
  store: GraphStore;
  chainHash: Uint8Array;
  peers?: GossipPeers;
  log: GraphLogger;
  now: () => number;
  /** This node's pubkey (66 hex). */
  pubkey: string;
  /** Verifies, stores, applies and relays one message received from a peer; never throws. */
  verifyAndAccept(m: BroadcastMessage, from: string): Promise<unknown>;
}

export class GossipSync {
  private readonly store: GraphStore;
  private readonly log: GraphLogger;
  private readonly now: () => number;
  private readonly peerState = new Map<string, PeerSync>();
  private nextId = 1n;
  /** Newest cursor time of a message learnt from peers (not our own): where syncing resumes. */
  private latestRemoteTimestamp = 0n;
  private stopped = false;

  constructor(private readonly o: GossipSyncOptions) {
    this.store = o.store;
    this.log = o.log;
    this.now = o.now;
  }

  private get pubkey(): string {
    return this.o.pubkey;
  }

  /** Where syncing resumes after a restart, from the store. */
  resume(): void {
    // As the reference: the newest of the last 100 stored messages that is not about this node.
    const remote = this.store.newest(100).find((m) => this.isRemoteCandidate(m.message));
    this.latestRemoteTimestamp = remote ? cursorTimestamp(remote.cursor) : 0n;
  }

  stop(): void {
    this.stopped = true;
    for (const s of this.peerState.values()) clearTimeout(s.timer);
    this.peerState.clear();
  }

  /** A message was accepted: one learnt from a peer (`from`) moves where syncing resumes. */
  learnt(timestamp: bigint, from?: string): void {
    if (from !== undefined && timestamp > this.latestRemoteTimestamp) this.latestRemoteTimestamp = timestamp;
  }

  /** Relays an accepted message to every subscriber but the peer it came from. */
  relay(m: BroadcastMessage, from?: string): void {
    const payload = encodeGossipMessage({ type: 'BroadcastMessagesFilterResult', messages: [m] });
    for (const [pk, st] of this.peerState) {
      if (pk === from || !st.subscriber) continue;
      this.sendRaw(pk, payload);
    }
  }

  async handle(pubkey: string, msg: GossipMessage): Promise<void> {
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
      await this.o.verifyAndAccept(m, from);
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

  startPeer(pubkey: string): void {
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

  query(pubkey: string, queries: { channelOutpoint: OutPoint; flags: number }[]): void {
    const id = this.nextId++;
    const st = this.state(pubkey);
    st.queries ??= new Set();
    st.queries.add(id);
    this.send(pubkey, { type: 'QueryBroadcastMessages', id, chainHash: this.o.chainHash, queries });
  }

  dropPeer(pubkey: string): void {
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
