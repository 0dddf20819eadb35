/**
 * Connection management: the listener, dialing, one session per peer, the `Init` exchange with
 * its chain-hash check, persisted known peers with reconnection, limits, and the message
 * dispatcher other layers plug into (`onMessage` / `send` for FiberMessage on /p2p/42,
 * `onGossip` / `sendGossip` for /p2p/43).
 *
 * Longer than the house's ~600 lines on purpose: a session's life (dial or accept, secio, protocol
 * opening, Init, replacement of a simultaneous session, close and redial) is one state machine
 * over one map of peers; the parts that stand alone are already apart (`redial.ts`, `gate.ts`,
 * `dispatcher.ts`, `peer-store.ts`, `session.ts`).
 */
import { EventEmitter } from 'node:events';
import { bytesToHex, equalBytes } from '../codec/index.ts';
import { type NodeIdentity, peerIdOf } from '../crypto/index.ts';
import type { Db } from '../store/index.ts';
import type { RawConn } from './conn.ts';
import {
  type GossipHandler,
  MessageDispatcher,
  type MessageHandler,
  type P2pLogger,
  SILENT,
} from './dispatcher.ts';
import type { P2pError } from './errors.ts';
import { PeerError } from './errors.ts';
import {
  decodeFiberMessage,
  encodeFiberMessage,
  type FiberMessage,
  type FiberMessageKind,
  hash256Text,
  INIT_FEATURES,
  type Init,
} from './fiber-message.ts';
import type { GateTicket } from './gate.ts';
import { type DialTarget, formatAddress, parseDialAddress, parseListenAddress } from './multiaddr.ts';
import { createPeerStore, type PeerStore } from './peer-store.ts';
import { FIBER_PROTOCOL_ID, GOSSIP_PROTOCOL_ID } from './protocol-select.ts';
import { type ReconnectPolicy, Redialer } from './redial.ts';
import { secioHandshake } from './secio/handshake.ts';
import { checkFrameSize, PeerSession } from './session.ts';
import { dial, type Listener, listen } from './transport.ts';

/**
 * Messages kept while a peer's Init is awaited (the reference's gossip protocol may speak as soon
 * as /p2p/43 opens, before /p2p/42 and Init); past this the extra ones are dropped.
 */
const MAX_PRE_INIT_MESSAGES = 64;

export interface PeerLimits {
  /** Inbound sessions (fnn `max_inbound_peers`, 16). */
  maxInbound?: number;
  /** Outbound sessions (dials) at once. */
  maxOutbound?: number;
}

export interface PeerTimeouts {
  /** secio handshake (tentacle: 10 s). */
  handshakeMs?: number;
  /** Each protocol selection and "no protocol open" (tentacle: 10 s). */
  selectMs?: number;
  /** Peer must send Init within this (Fiber: 20 s). */
  initMs?: number;
  /** yamux ping interval and answer limit (tentacle: 30 s). */
  keepAliveMs?: number;
  /** TCP connect / WebSocket upgrade (10 s). */
  dialMs?: number;
}

export interface PeerManagerOptions {
  identity: NodeIdentity;
  /** e.g. `/ip4/127.0.0.1/tcp/8228`; WebSocket is served on the same port. Absent: no listener. */
  listenAddr?: string;
  /** Genesis hash of the chain this node is on (32 bytes, or 0x-hex). */
  chainHash: Uint8Array | string;
  /** Node database (with `peerSchema` applied) for known peers; in-memory when absent. */
  db?: Db;
  /** `fiber.bootnode_addrs`: dialled at start and kept connected. */
  bootnodes?: string[];
  /** Feature bit vector sent in Init. */
  features?: Uint8Array;
  limits?: PeerLimits;
  timeouts?: PeerTimeouts;
  reconnect?: ReconnectPolicy;
  logger?: P2pLogger;
  /** Extra addresses for `connectByPubkey` (e.g. from the network graph). */
  resolveAddresses?: (pubkey: string) => string[];
  /** Called per gossip message sent to a peer (metrics). */
  onGossipSent?: () => void;
  /** Called per Fiber message sent to a peer, with its kind (metrics). */
  onMessageSent?: (kind: FiberMessageKind) => void;
  /**
   * Holds outgoing bytes until the state they depend on is durable (persist-before-speak; the
   * store's `Durability.whenDurable`). Runs `fn` in the order offered. Default: at once.
   */
  release?: (fn: () => void) => void;
}

export interface PeerInfo {
  pubkey: string;
  peerId: string;
  /** The session's address, with `/p2p/<peer id>`. */
  address: string;
  outbound: boolean;
  /** The peer's Init, once received and accepted. */
  init?: Init;
}

interface Peer extends PeerInfo {
  session: PeerSession;
  initTimer?: NodeJS.Timeout;
  /** Dialled address to come back to if the session drops. */
  redial?: string;
  closeReason?: string;
  initSent?: boolean;
  /** Closed in favour of a simultaneous session with the same peer. */
  replaced?: boolean;
  onClosed: (() => void)[];
  /** Messages that arrived before the peer's Init, replayed once it is accepted. */
  preInit?: { protocolId: number; payload: Uint8Array }[];
}

export interface PeerManagerEvents {
  /** The peer's Init arrived and matched our chain. */
  connected: [PeerInfo];
  disconnected: [PeerInfo, string];
  /** A tentacle protocol stream opened on a session (42 Fiber, 43 gossip). */
  protocol: [pubkey: string, protocolId: number];
  /** An Init arrived, before its chain hash is checked. */
  init: [PeerInfo, Init];
}

export class PeerManager extends EventEmitter<PeerManagerEvents> {
  readonly identity: NodeIdentity;
  private readonly chainHash: Uint8Array;
  private readonly features: Uint8Array;
  private readonly log: P2pLogger;
  private readonly store: PeerStore;
  private readonly peers = new Map<string, Peer>();
  private readonly dialing = new Map<string, Promise<PeerInfo>>();
  private readonly dispatcher: MessageDispatcher;
  /** Addresses to keep connected (bootnodes, saved peers). */
  private readonly redialer: Redialer;
  /** Inbound connections in the secio handshake. */
  private readonly pendingInbound = new Set<RawConn>();
  /** Sessions past secio whose Fiber protocol is not open yet, with their direction (outbound). */
  private readonly opening = new Map<PeerSession, boolean>();
  private listener?: Listener;
  private started = false;
  private stopping = false;
  private readonly t: Required<PeerTimeouts>;
  private readonly maxInbound: number;
  private readonly maxOutbound: number;

  constructor(private readonly opts: PeerManagerOptions) {
    super();
    this.identity = opts.identity;
    this.chainHash =
      typeof opts.chainHash === 'string'
        ? Buffer.from(opts.chainHash.replace(/^0x/, ''), 'hex')
        : opts.chainHash;
    if (this.chainHash.length !== 32) throw new Error('chainHash must be 32 bytes');
    this.features = opts.features ?? INIT_FEATURES;
    this.log = opts.logger ?? SILENT;
    this.store = createPeerStore(opts.db);
    const t = opts.timeouts ?? {};
    this.t = {
      handshakeMs: t.handshakeMs ?? 10_000,
      selectMs: t.selectMs ?? 10_000,
      initMs: t.initMs ?? 20_000,
      keepAliveMs: t.keepAliveMs ?? 30_000,
      dialMs: t.dialMs ?? 10_000,
    };
    this.maxInbound = opts.limits?.maxInbound ?? 16;
    this.maxOutbound = opts.limits?.maxOutbound ?? 32;
    this.dispatcher = new MessageDispatcher(this.log);
    this.redialer = new Redialer(
      opts.reconnect ?? {},
      {
        dial: async (address) => this.dialOnce(parseDialAddress(address)),
        connected: (address) => {
          let id: string | undefined;
          try {
            id = parseDialAddress(address).peerId;
          } catch {
            return false; // the dial reports it, and the address is dropped
          }
          return [...this.peers.values()].some((p) => (id ? p.peerId === id : p.redial === address));
        },
        dropped: (address) => {
          for (const p of this.peers.values()) if (p.redial === address) p.redial = undefined;
        },
      },
      this.log,
    );
  }

  // ---- lifecycle ----

  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    if (this.opts.listenAddr) {
      const { host, port } = parseListenAddress(this.opts.listenAddr);
      this.listener = await listen(host, port, (c, ticket) => this.onInbound(c, ticket));
      this.log.info({ addresses: this.listeningAddrs() }, 'p2p listening');
    }
    for (const b of this.opts.bootnodes ?? []) this.want(b);
    for (const k of this.store.all()) this.want(k.address);
  }

  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    this.redialer.stop();
    for (const c of this.pendingInbound) c.destroy();
    for (const s of this.opening.keys()) s.close('node stopping');
    const closing = [...this.peers.values()].map(
      (p) => new Promise<void>((resolve) => this.closeSession(p, 'node stopping', resolve)),
    );
    await Promise.allSettled([...this.dialing.values()]);
    await Promise.race([Promise.all(closing), new Promise((r) => setTimeout(r, 2_000).unref())]);
    await this.listener?.close();
    this.listener = undefined;
  }

  /** Listening multiaddrs with `/p2p/<peer id>`: TCP, then WebSocket on the same port. */
  listeningAddrs(): string[] {
    if (!this.listener) return [];
    const { host, port } = this.listener;
    return [
      formatAddress(host, port, false, this.identity.peerId),
      formatAddress(host, port, true, this.identity.peerId),
    ];
  }

  get listenPort(): number | undefined {
    return this.listener?.port;
  }

  get peersCount(): number {
    return this.peers.size;
  }

  list(): PeerInfo[] {
    return [...this.peers.values()].map(({ pubkey, peerId, address, outbound, init }) => ({
      pubkey,
      peerId,
      address,
      outbound,
      init,
    }));
  }

  isConnected(pubkey: string): boolean {
    return this.peers.has(normalisePubkey(pubkey));
  }

  /** The peer's Init features, or undefined before Init (channel opening checks this). */
  peerInit(pubkey: string): Init | undefined {
    return this.peers.get(normalisePubkey(pubkey))?.init;
  }

  // ---- connecting ----

  /**
   * Dials `address` and resolves once the Fiber protocol is open (Init follows asynchronously).
   * Errors are DomainErrors with the reference's texts where it has one.
   */
  async connect(address: string, { save = true }: { save?: boolean } = {}): Promise<PeerInfo> {
    if (address === '') {
      throw new PeerError(
        'InvalidAddress',
        'address must not be empty, expected a multiaddr like /ip4/1.2.3.4/tcp/8080',
      );
    }
    let target: DialTarget;
    try {
      target = parseDialAddress(address);
    } catch (e) {
      throw new PeerError('InvalidAddress', (e as Error).message);
    }
    if (target.peerId === this.identity.peerId) throw new PeerError('ConnectSelf', 'cannot connect to self');
    if (target.peerId && [...this.peers.values()].some((p) => p.peerId === target.peerId)) {
      throw new PeerError('AlreadyConnected', 'Peer already connected');
    }
    const info = await this.dialOnce(target);
    if (save) {
      this.store.save(info.pubkey, info.peerId, withPeerId(target.address, info.peerId));
      this.want(withPeerId(target.address, info.peerId), false);
    }
    return info;
  }

  /** Dials a known address of `pubkey` (saved peers, then `resolveAddresses`). */
  async connectByPubkey(pubkey: string): Promise<PeerInfo> {
    const pk = normalisePubkey(pubkey);
    if (pk === this.identity.pubkeyHex) throw new PeerError('ConnectSelf', 'cannot connect to self');
    if (this.peers.has(pk)) throw new PeerError('AlreadyConnected', 'Peer already connected');
    const addrs = [...this.store.addressesOf(pk), ...(this.opts.resolveAddresses?.(pk) ?? [])];
    if (addrs.length === 0) throw new PeerError('PeerNotFound', `Peer not found error: Pubkey(${pk})`);
    let last: unknown;
    for (const a of addrs) {
      try {
        return await this.connect(a, { save: false });
      } catch (e) {
        last = e;
      }
    }
    throw last;
  }

  /** Closes the session with `pubkey` and keeps redialling it as after any drop (a peer that stopped answering). */
  drop(pubkey: string, reason: string): void {
    const peer = this.peers.get(normalisePubkey(pubkey));
    // After what was offered before it: a held message must not be cut off by the close.
    if (peer) this.release(() => this.closeSession(peer, reason));
  }

  /** Closes the session with `pubkey`; it is not redialled until connected again explicitly. */
  disconnect(pubkey: string, reason = 'requested'): Promise<void> {
    const pk = normalisePubkey(pubkey);
    const peer = this.peers.get(pk);
    if (!peer)
      return Promise.reject(new PeerError('PeerNotConnected', `peer Pubkey(${pk}) is not connected`));
    if (peer.redial) this.redialer.unwant(peer.redial);
    return new Promise((resolve) => this.release(() => this.closeSession(peer, reason, resolve)));
  }

  private dialOnce(target: DialTarget): Promise<PeerInfo> {
    const key = target.address;
    const existing = this.dialing.get(key);
    if (existing) return existing;
    const outbound = [...this.peers.values()].filter((p) => p.outbound).length + this.dialing.size;
    if (outbound >= this.maxOutbound) {
      return Promise.reject(
        new PeerError('OutboundLimit', `outbound peer limit (${this.maxOutbound}) reached`),
      );
    }
    const p = this.doDial(target).finally(() => this.dialing.delete(key));
    this.dialing.set(key, p);
    return p;
  }

  private async doDial(target: DialTarget): Promise<PeerInfo> {
    if (this.stopping) throw new PeerError('NodeStopping', 'node is stopping');
    let raw: RawConn;
    try {
      raw = await dial(target, this.t.dialMs);
    } catch (e) {
      throw new PeerError('DialFailed', (e as Error).message);
    }
    let secure: Awaited<ReturnType<typeof secioHandshake>>;
    try {
      secure = await secioHandshake(raw, this.handshakeOptions());
    } catch (e) {
      const err = e as P2pError;
      this.log.warn({ address: target.address, err: err.message }, 'p2p handshake failed');
      if (err.kind === 'ConnectSelf') throw new PeerError('ConnectSelf', 'cannot connect to self');
      throw new PeerError('HandshakeFailed', `handshake error: ${err.message}`);
    }
    const pubkey = bytesToHex(secure.remotePubkey, false);
    const peerId = peerIdOf(secure.remotePubkey);
    if (target.peerId && target.peerId !== peerId) {
      secure.destroy();
      this.log.warn({ address: target.address, proven: peerId }, 'p2p peer id not match');
      throw new PeerError('PeerIdMismatch', `peer id not match: ${target.address} is ${peerId}`);
    }
    if (!this.admitDuplicate(pubkey, true)) {
      secure.destroy();
      throw new PeerError('AlreadyConnected', 'Peer already connected');
    }
    const address = withPeerId(target.address, peerId);
    const redial = this.redialer.has(target.address)
      ? target.address
      : this.redialer.has(address)
        ? address
        : undefined;
    return this.runSession(secure, { pubkey, peerId, address, outbound: true, redial, onClosed: [] });
  }

  private handshakeOptions() {
    return {
      secretKey: this.identity.secretKey,
      publicKey: this.identity.publicKey,
      timeoutMs: this.t.handshakeMs,
    };
  }

  /**
   * An accepted connection: the listener's gate bounds it until secio proves a key; the inbound
   * limit counts sessions with a proven key only, so unauthenticated sockets cannot fill it.
   */
  private onInbound(raw: RawConn, ticket: GateTicket): void {
    if (this.stopping) {
      raw.destroy();
      return;
    }
    this.pendingInbound.add(raw);
    secioHandshake(raw, this.handshakeOptions())
      .then((secure) => {
        this.pendingInbound.delete(raw);
        ticket.leave();
        if (this.stopping) return secure.destroy();
        if (this.inboundSessions() >= this.maxInbound) {
          this.log.warn({ address: raw.remoteAddr }, 'p2p inbound limit reached, dropping connection');
          return secure.destroy();
        }
        const pubkey = bytesToHex(secure.remotePubkey, false);
        if (!this.admitDuplicate(pubkey, false)) {
          this.log.debug({ pubkey }, 'p2p repeated connection dropped');
          return secure.destroy();
        }
        const peerId = peerIdOf(secure.remotePubkey);
        const address = withPeerId(raw.remoteAddr, peerId);
        this.runSession(secure, { pubkey, peerId, address, outbound: false, onClosed: [] }).catch((e) =>
          this.log.debug({ pubkey, err: (e as Error).message }, 'p2p inbound session ended before opening'),
        );
      })
      .catch((e) => {
        this.pendingInbound.delete(raw);
        this.log.warn({ address: raw.remoteAddr, err: (e as Error).message }, 'p2p inbound handshake failed');
      });
  }

  /** Inbound sessions with a proven key: open peers and those still opening their protocols. */
  private inboundSessions(): number {
    let n = 0;
    for (const p of this.peers.values()) if (!p.outbound) n++;
    for (const outbound of this.opening.values()) if (!outbound) n++;
    return n;
  }

  /** Runs a session until protocol 42 opens (resolve) or the session ends first (reject). */
  private runSession(
    secure: Awaited<ReturnType<typeof secioHandshake>>,
    base: Omit<Peer, 'session'>,
  ): Promise<PeerInfo> {
    return new Promise((resolve, reject) => {
      let peer: Peer | undefined;
      // Gossip may arrive on /p2p/43 before /p2p/42 is open.
      const early: { id: number; payload: Uint8Array }[] = [];
      const session = new PeerSession(secure, {
        outbound: base.outbound,
        protocols: [FIBER_PROTOCOL_ID, GOSSIP_PROTOCOL_ID],
        selectTimeoutMs: this.t.selectMs,
        keepAliveMs: this.t.keepAliveMs,
        handlers: {
          protocolOpen: (id) => {
            this.log.debug({ pubkey: base.pubkey, protocol: id }, 'p2p protocol open');
            this.emit('protocol', base.pubkey, id);
            if (id !== FIBER_PROTOCOL_ID || peer) return;
            this.opening.delete(session);
            if (!this.admitDuplicate(base.pubkey, base.outbound)) {
              session.close('repeated connection');
              return;
            }
            peer = { ...base, session };
            this.peers.set(base.pubkey, peer);
            this.onPeerOpen(peer);
            resolve(publicInfo(peer));
            for (const m of early.splice(0)) this.onPayload(peer, m.id, m.payload);
          },
          message: (id, payload) => {
            if (peer) this.onPayload(peer, id, payload);
            else if (early.length < MAX_PRE_INIT_MESSAGES) early.push({ id, payload });
          },
          protocolClosed: (id, reason) => {
            // Fiber treats the peer as gone when its protocol closes.
            if (id === FIBER_PROTOCOL_ID && peer) session.close(`fiber protocol closed: ${reason}`);
          },
          close: (reason, err) => {
            this.opening.delete(session);
            if (!peer) {
              reject(new PeerError('SessionClosed', `session closed: ${reason}`));
              return;
            }
            this.onPeerClosed(peer, peer.closeReason ?? reason, err);
          },
        },
      });
      this.opening.set(session, base.outbound);
      session.start();
    });
  }

  /**
   * Whether a new session (`outbound` or not) with `pubkey` may proceed. Without a session to
   * that peer, yes. With one — two nodes dialing each other at the same time — both ends keep
   * the session dialed by the node with the smaller pubkey, so they agree without a message and
   * do not both drop (tentacle would keep whichever came first on each side, possibly
   * different ones).
   */
  private admitDuplicate(pubkey: string, outbound: boolean): boolean {
    const existing = this.peers.get(pubkey);
    if (!existing) return true;
    if (existing.outbound === outbound) return false;
    const weDialPreferred = this.identity.pubkeyHex < pubkey;
    if (outbound !== weDialPreferred) return false;
    // The new session wins: the existing one ends without a redial of its own.
    this.log.debug({ pubkey }, 'p2p simultaneous connection: keeping the one dialled by the smaller key');
    existing.redial = undefined;
    existing.replaced = true;
    this.closeSession(existing, 'replaced by a simultaneous connection');
    return true;
  }

  private onPeerOpen(peer: Peer): void {
    this.log.info({ pubkey: peer.pubkey, address: peer.address }, 'p2p peer session open');
    if (peer.redial) {
      this.redialer.succeeded(peer.redial);
      try {
        this.store.touch(peer.pubkey, peer.redial);
      } catch (e) {
        // A store that cannot write (disk full) must not cost the session: the time is a hint.
        this.log.warn({ pubkey: peer.pubkey, err: (e as Error).message }, 'p2p peer last-seen not stored');
      }
    }
    // The dialer speaks first; the listener answers once it has read the dialer's Init. Both
    // orders are valid for the reference (each side sends Init on connect and checks the other's),
    // but this way a listener always gets to decode and check the dialer's chain hash before a
    // dialer on another chain, having read ours, can drop the session.
    if (peer.outbound && !this.sendInit(peer)) return;
    peer.initTimer = setTimeout(() => {
      if (!peer.init) this.closeSession(peer, 'Init message timeout', undefined, false);
    }, this.t.initMs);
    peer.initTimer.unref();
  }

  private sendInit(peer: Peer): boolean {
    if (peer.initSent) return true;
    peer.initSent = true;
    try {
      peer.session.send(
        FIBER_PROTOCOL_ID,
        encodeFiberMessage({ type: 'Init', value: { features: this.features, chainHash: this.chainHash } }),
      );
      return true;
    } catch (e) {
      this.closeSession(peer, `sending Init failed: ${(e as Error).message}`);
      return false;
    }
  }

  private onPeerClosed(peer: Peer, reason: string, err?: Error): void {
    clearTimeout(peer.initTimer);
    if (this.peers.get(peer.pubkey) === peer) this.peers.delete(peer.pubkey);
    this.log.info({ pubkey: peer.pubkey, reason, err: err?.message }, 'p2p peer disconnected');
    for (const f of peer.onClosed.splice(0)) f();
    // A session replaced before its Init was accepted was never announced as connected.
    if (!(peer.replaced && !peer.init)) this.emit('disconnected', publicInfo(peer), reason);
    if (peer.redial && !this.stopping) this.redialer.lost(peer.redial);
  }

  private closeSession(peer: Peer, reason: string, done?: () => void, redial = true): void {
    if (!redial && peer.redial) this.redialer.unwant(peer.redial);
    peer.closeReason ??= reason;
    if (peer.session.isClosed) {
      done?.();
      return;
    }
    if (done) peer.onClosed.push(done);
    peer.session.close(reason);
  }

  // ---- messages ----

  private onPayload(peer: Peer, protocolId: number, payload: Uint8Array): void {
    if (protocolId === GOSSIP_PROTOCOL_ID) {
      if (!peer.init) {
        this.holdUntilInit(peer, protocolId, payload);
        return;
      }
      this.dispatcher.gossip(peer.pubkey, payload);
      return;
    }
    let msg: FiberMessage;
    try {
      msg = decodeFiberMessage(payload);
    } catch (e) {
      this.log.warn({ pubkey: peer.pubkey, err: (e as Error).message }, 'p2p malformed FiberMessage');
      this.closeSession(peer, `malformed message: ${(e as Error).message}`);
      return;
    }
    if (msg.type === 'Init') {
      this.onInit(peer, msg.value);
      return;
    }
    if (!peer.init) {
      this.holdUntilInit(peer, protocolId, payload);
      return;
    }
    this.dispatcher.message(peer.pubkey, msg);
  }

  private holdUntilInit(peer: Peer, protocolId: number, payload: Uint8Array): void {
    peer.preInit ??= [];
    if (peer.preInit.length >= MAX_PRE_INIT_MESSAGES) {
      this.log.warn({ pubkey: peer.pubkey, protocol: protocolId }, 'p2p message before Init dropped');
      return;
    }
    peer.preInit.push({ protocolId, payload });
  }

  private onInit(peer: Peer, init: Init): void {
    this.emit('init', publicInfo(peer), init);
    // Our answer goes out even on a mismatch, so that the dialer can log the reason too.
    if (!this.sendInit(peer)) return;
    if (!equalBytes(init.chainHash, this.chainHash)) {
      const reason = `Invalid chain hash: ${hash256Text(init.chainHash)} (expecting ${hash256Text(this.chainHash)})`;
      this.log.error({ pubkey: peer.pubkey }, `chain hash mismatch with peer: ${reason}, disconnect now`);
      this.closeSession(peer, reason, undefined, false);
      return;
    }
    const first = !peer.init;
    peer.init = init;
    clearTimeout(peer.initTimer);
    if (!first) return;
    this.emit('connected', publicInfo(peer));
    const held = peer.preInit ?? [];
    peer.preInit = undefined;
    for (const m of held) if (!peer.session.isClosed) this.onPayload(peer, m.protocolId, m.payload);
  }

  /** Registers a handler for one FiberMessage kind; returns an unsubscribe function. */
  onMessage<K extends FiberMessageKind>(kind: K, handler: MessageHandler<K>): () => void {
    return this.dispatcher.onMessage(kind, handler);
  }

  /** Sends a FiberMessage to a connected peer. */
  send(pubkey: string, message: FiberMessage): void {
    this.sendRaw(pubkey, FIBER_PROTOCOL_ID, encodeFiberMessage(message));
    this.opts.onMessageSent?.(message.type);
  }

  /** Registers a handler for gossip messages (/p2p/43 payloads, undecoded). */
  onGossip(handler: GossipHandler): () => void {
    return this.dispatcher.onGossip(handler);
  }

  /** Sends one gossip message (an encoded GossipMessage) on /p2p/43. */
  sendGossip(pubkey: string, payload: Uint8Array): void {
    this.sendRaw(pubkey, GOSSIP_PROTOCOL_ID, payload);
    this.opts.onGossipSent?.();
  }

  /**
   * Sends one gossip message to every peer past Init with /p2p/43 open, except `except`;
   * returns the pubkeys it went to.
   */
  broadcastGossip(payload: Uint8Array, except?: string): string[] {
    const skip = except === undefined ? undefined : normalisePubkey(except);
    const sent: string[] = [];
    for (const p of this.peers.values()) {
      if (p.pubkey === skip || !p.init || p.session.isClosed || !p.session.isOpen(GOSSIP_PROTOCOL_ID))
        continue;
      this.releaseTo(p.session, GOSSIP_PROTOCOL_ID, payload);
      this.opts.onGossipSent?.();
      sent.push(p.pubkey);
    }
    return sent;
  }

  private sendRaw(pubkey: string, protocolId: number, payload: Uint8Array): void {
    const pk = normalisePubkey(pubkey);
    const peer = this.peers.get(pk);
    if (!peer || peer.session.isClosed)
      throw new PeerError('PeerNotConnected', `peer Pubkey(${pk}) is not connected`);
    if (!peer.session.isOpen(protocolId)) {
      throw new PeerError('ProtocolNotOpen', `peer Pubkey(${pk}) has no open protocol /p2p/${protocolId}`);
    }
    checkFrameSize(payload);
    this.releaseTo(peer.session, protocolId, payload);
  }

  private readonly release: (fn: () => void) => void = (fn) =>
    this.opts.release ? this.opts.release(fn) : fn();

  /** Sessions that `release` gave a message whose bytes may still wait in their write queues. */
  private readonly unflushed = new Set<PeerSession>();

  /** `session.send(protocolId, payload)` through the output gate, noted for `flushReleased`. */
  private releaseTo(session: PeerSession, protocolId: number, payload: Uint8Array): void {
    this.release(() => {
      session.send(protocolId, payload);
      // Nobody may call `flushReleased`: the sessions' own microtasks write the bytes anyway.
      if (this.unflushed.size === 0) queueMicrotask(() => this.unflushed.clear());
      this.unflushed.add(session);
    });
  }

  /**
   * Writes to their sockets, now, the messages the output gate has just released (rather than
   * at the microtasks that would): the gate calls it before it runs the RPC output of the same
   * flush (`Durability`'s `afterFirst`).
   */
  flushReleased(): void {
    for (const s of this.unflushed) s.flushWrites();
    this.unflushed.clear();
  }

  // ---- reconnection ----

  /** Keeps `address` connected; dials now unless `dialNow` is false. */
  private want(address: string, dialNow = true): void {
    if (this.stopping || this.redialer.has(address)) return;
    // A session to this address that is already up adopts it for redialing.
    for (const p of this.peers.values()) if (p.outbound && p.address === address) p.redial = address;
    this.redialer.want(address, dialNow);
  }
}

export function createPeerManager(opts: PeerManagerOptions): PeerManager {
  return new PeerManager(opts);
}

function publicInfo(p: Peer): PeerInfo {
  return { pubkey: p.pubkey, peerId: p.peerId, address: p.address, outbound: p.outbound, init: p.init };
}

function withPeerId(address: string, peerId: string): string {
  return /\/p2p\/[^/]+$/.test(address) ? address : `${address}/p2p/${peerId}`;
}

function normalisePubkey(pk: string): string {
  return (pk.startsWith('0x') ? pk.slice(2) : pk).toLowerCase();
}

export type { GossipHandler, MessageHandler, P2pLogger } from './dispatcher.ts';
export type { ReconnectPolicy } from './redial.ts';
