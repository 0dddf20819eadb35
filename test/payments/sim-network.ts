/**
 * A simulated network for payment tests: real node payment stacks (invoice service, payment
 * service, relay, each with its own SQLite store and key) joined at the ChannelTlcPort boundary.
 * A channel refuses a TLC its offerer cannot afford; each node's router sees the channels it
 * knows (all, unless some are hidden from it), with its own channels' spendable balance, as a
 * node's graph does. Faults stand for a node killed at a given instant (see `Faults`), and
 * `startServices` restarts a node's payment stack over its database.
 */
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { ChannelError } from '../../src/channel/errors.ts';
import { bytesToHex } from '../../src/codec/hex.ts';
import { findPathInRange, maxRoutableAmount } from '../../src/graph/path-range.ts';
import { findPath, type RouteEdge, type RoutingGraph } from '../../src/graph/pathfind.ts';
import { payeeOf } from '../../src/invoice/codec.ts';
import { createInvoiceService, type InvoiceService } from '../../src/invoice/service.ts';
import { invoiceSchema } from '../../src/invoice/store.ts';
import { paymentLinkSchema, TlcLinks } from '../../src/payment/links.ts';
import {
  type ChannelTlcPort,
  type ForwardPolicy,
  type IncomingTlc,
  PaymentRelay,
} from '../../src/payment/relay.ts';
import { onionKeyOf } from '../../src/payment/resume.ts';
import { PaymentService } from '../../src/payment/service.ts';
import type { PaymentSession } from '../../src/payment/session.ts';
import { PaymentStore, paymentSchema } from '../../src/payment/store.ts';
import { type Db, openDatabase } from '../../src/store/db.ts';

export const CKB = 100_000_000n;
export const FEE_PPM = 1000n;
export const fee = (amount: bigint) => (amount * FEE_PPM + 999_999n) / 1_000_000n;

/** Where a node "dies": what its payment stack does not get to do. */
export interface Faults {
  /**
   * After this many TLCs handed to the channel, the next ones never are: the node died after the
   * session (with the attempt) was saved, before the TLC was offered.
   */
  hangAfterSends?: number;
  /** The channel takes the TLC, but the link is never written (killed right after the add). */
  addThenHang?: boolean;
  /**
   * An outcome of one of our TLCs reaches us: 'recordOnly' — the channel removed it and the
   * outcome was recorded, then the node died; 'drop' — removed, nothing recorded.
   */
  outcome?: 'recordOnly' | 'drop';
  /**
   * The channel commits the TLCs peers add to us, but the node dies before its relay handles
   * them: they wait in the channel, unhandled, for the restart.
   */
  dropIncoming?: boolean;
}

export interface Stack {
  name: string;
  sk: Uint8Array;
  pubkey: string;
  db: Db;
  links: TlcLinks;
  invoices: InvoiceService;
  payments: PaymentService;
  relay: PaymentRelay;
  faults: Faults;
  /** Channels (outpoints) this node's graph does not know. */
  hidden: Set<string>;
  /**
   * Every payment session as the service last saved it, whole (the store keeps a settled one in
   * its compact form only): what the tests read of attempts and requests.
   */
  saved: Map<string, PaymentSession>;
}

/** The session of `hash` as `stack`'s payment service last saved it. */
export function savedSession(stack: Stack, hash: string): PaymentSession | undefined {
  return stack.saved.get(hash);
}

interface SimTlc {
  from: Stack;
  amount: bigint;
  paymentHash: string;
  onionKey: string;
  /** As the receiving side's relay takes it. */
  incoming: IncomingTlc;
}

export interface SimChannel {
  id: string;
  outpoint: string;
  a: Stack;
  b: Stack;
  balance: Map<Stack, bigint>;
  tlcs: Map<bigint, SimTlc>;
  nextTlc: bigint;
  /** Forwards onto this channel refused before one goes through. */
  refuse: number;
  /** A UDT channel's type script (as send_payment names it); absent for CKB. */
  udt?: { code_hash: string; hash_type: string; args: string };
}

export function outpoint(i: number) {
  return `0x${i.toString(16).padStart(64, '0')}00000000`;
}

export function buildNetwork(opts: { holdTimeoutMs?: number } = {}) {
  const channels: SimChannel[] = [];
  /** Features from node announcements; a node absent here announced none. */
  const nodeFeatures = new Map<string, Uint8Array>();
  let paused: (() => void)[] | null = null;
  const failures: { channel: string; packet: Uint8Array }[] = [];
  const deliver = (f: () => void) => {
    if (paused) paused.push(f);
    else setTimeout(f, 1);
  };
  const policy = (ch: SimChannel): ForwardPolicy => ({
    feeRate: FEE_PPM,
    tlcMinValue: 0n,
    tlcExpiryDelta: 14_400_000n,
    enabled: true,
    udt: ch.udt ? JSON.stringify(ch.udt) : null,
    udtScript: ch.udt ?? null,
    channelOutpoint: ch.outpoint,
  });
  const available = (ch: SimChannel, s: Stack) => {
    let v = ch.balance.get(s)!;
    for (const t of ch.tlcs.values()) if (t.from === s) v -= t.amount;
    return v;
  };
  const other = (ch: SimChannel, s: Stack) => (ch.a === s ? ch.b : ch.a);
  const byId = (id: string) => channels.find((c) => c.id === id)!;
  /** The offerer learns the outcome of its TLC, unless it "died" at that instant. */
  const outcomeTo = (
    t: SimTlc,
    channelId: string,
    tlcId: bigint,
    outcome: { preimage: Uint8Array } | { errorPacket: Uint8Array },
  ) => {
    const to = t.from;
    if (to.faults.outcome === 'drop') return;
    if (to.faults.outcome === 'recordOnly') {
      if (to.links.get(channelId, tlcId)) to.links.recordOutcome(channelId, tlcId, outcome);
      return;
    }
    deliver(() =>
      'preimage' in outcome
        ? void to.relay.onFulfilled(channelId, tlcId, outcome.preimage)
        : void to.relay.onFailed(channelId, tlcId, outcome.errorPacket),
    );
  };
  /** A process's port: its faults are those it started with (a restart brings new ones). */
  const portFor = (me: Stack, faults: Faults): ChannelTlcPort => ({
    channelByFundingTx: (tx) => {
      const ch = channels.find((c) => c.outpoint.slice(0, 66) === tx && (c.a === me || c.b === me));
      return ch ? { channelId: ch.id, policy: policy(ch) } : undefined;
    },
    policyOf: (id) => policy(byId(id)),
    offeredTlcs: (op) =>
      channels
        .filter((c) => c.outpoint === op && (c.a === me || c.b === me))
        .flatMap((c) =>
          [...c.tlcs.entries()]
            .filter(([, t]) => t.from === me)
            .map(([tlcId, t]) => ({
              channelId: c.id,
              tlcId,
              paymentHash: t.paymentHash,
              amount: t.amount,
              onionKey: t.onionKey,
            })),
        ),
    unresolvedReceived: () =>
      channels
        .filter((c) => c.a === me || c.b === me)
        .flatMap((c) => [...c.tlcs.values()].filter((t) => t.from !== me).map((t) => t.incoming)),
    addTlc: async (channelId, t) => {
      const ch = byId(channelId);
      if (ch.refuse > 0 && me !== payer()) {
        ch.refuse--;
        throw new ChannelError('TlcLimitExceeded', 'TemporaryChannelFailure');
      }
      if (t.amount > available(ch, me)) throw new ChannelError('TlcLimitExceeded', 'TemporaryChannelFailure');
      const id = ch.nextTlc++;
      const incoming = { channelId, tlcId: id, ...t };
      ch.tlcs.set(id, {
        from: me,
        amount: t.amount,
        paymentHash: t.paymentHash,
        onionKey: onionKeyOf(t.onion),
        incoming,
      });
      // The TLC is committed now: the peer's process of this moment handles it, or — having
      // died before its relay did — never does (its restart finds the TLC in the channel).
      const peer = other(ch, me);
      const relay = peer.faults.dropIncoming ? null : peer.relay;
      deliver(() => void relay?.onIncoming(incoming));
      if (faults.addThenHang) return new Promise<bigint>(() => {});
      return id;
    },
    fulfilTlc: async (channelId, tlcId, preimage) => {
      const ch = byId(channelId);
      const t = ch.tlcs.get(tlcId);
      if (!t)
        throw new ChannelError('TlcNotFound', `Invalid parameter: TLC ${tlcId} not found or not removable`);
      ch.tlcs.delete(tlcId);
      ch.balance.set(t.from, ch.balance.get(t.from)! - t.amount);
      ch.balance.set(me, ch.balance.get(me)! + t.amount);
      // As the node's TLC recorder does with the channel state that removed it.
      me.relay.recordReceivedFulfilled(t.paymentHash);
      outcomeTo(t, channelId, tlcId, { preimage });
    },
    failTlc: async (channelId, tlcId, packet) => {
      const ch = byId(channelId);
      const t = ch.tlcs.get(tlcId);
      if (!t)
        throw new ChannelError('TlcNotFound', `Invalid parameter: TLC ${tlcId} not found or not removable`);
      ch.tlcs.delete(tlcId);
      failures.push({ channel: channelId, packet });
      outcomeTo(t, channelId, tlcId, { errorPacket: packet });
    },
  });
  let payerStack: Stack | undefined;
  const payer = () => payerStack;
  /** The graph as `viewer` knows it. */
  const graphOf = (viewer: Stack): RoutingGraph => {
    const edges = (): RouteEdge[] =>
      channels
        .filter((c) => !viewer.hidden.has(c.outpoint))
        .flatMap((c, i) =>
          [
            [c.a, c.b],
            [c.b, c.a],
          ].map(([f, t]) => ({
            from: f!.pubkey,
            to: t!.pubkey,
            outpoint: c.outpoint,
            capacity: [...c.balance.values()].reduce((x, y) => x + y, 0n),
            // The route request's key for a UDT: its script as JSON (what a payment asks for).
            udt: c.udt ? JSON.stringify(c.udt) : null,
            feeRate: FEE_PPM,
            tlcExpiryDelta: 14_400_000,
            tlcMinimumValue: 0n,
            outboundLiquidity: f === viewer ? available(c, f!) : null,
            lastUpdate: BigInt(100 - i),
          })),
        );
    return {
      inbounds: (n) => edges().filter((e) => e.to === n),
      outbounds: (n) => edges().filter((e) => e.from === n),
      edge: (op, from) => {
        const e = edges().find((x) => x.outpoint === op && x.from === from);
        return e ? { edge: e, enabled: true } : undefined;
      },
      supportsMpp: () => true,
    };
  };
  /** (Re)builds a node's payment service and relay over its database: a restart. */
  const startServices = (stack: Stack, o: { resume?: boolean } = {}) => {
    stack.links = new TlcLinks(stack.db);
    const faults = stack.faults;
    const graph = graphOf(stack);
    const store = new PaymentStore(stack.db);
    const put = store.put.bind(store);
    store.put = (s) => {
      put(s);
      stack.saved.set(s.paymentHash, s);
    };
    stack.payments = new PaymentService({
      store,
      nodePubkey: stack.pubkey,
      router: {
        findRoute: (req) => findPath(graph, req),
        findRouteInRange: (req, low) => findPathInRange(graph, req, low),
        maxRoutableAmount: (req) => maxRoutableAmount(graph, req),
        nodeFeatures: (node) => nodeFeatures.get(node),
      },
      tlc: {
        sendTlc: (t) => {
          const f = faults;
          if (f.hangAfterSends !== undefined && f.hangAfterSends-- <= 0) return new Promise<void>(() => {});
          return stack.relay.outbox().sendTlc(t);
        },
      },
      localFeeRate: () => FEE_PPM,
      invoices: {
        parseInvoice: (s) => stack.invoices.parseInvoice(s),
        verifyInvoice: () => true,
        payeeOf: (inv) => bytesToHex(payeeOf(inv)!, false),
      },
    });
    stack.relay = new PaymentRelay({
      nodeSecretKey: stack.sk,
      nodePubkey: stack.pubkey,
      channels: portFor(stack, faults),
      links: stack.links,
      invoices: stack.invoices,
      payments: stack.payments,
      ...(opts.holdTimeoutMs ? { mppHoldTimeoutMs: opts.holdTimeoutMs } : {}),
    });
    if (o.resume) stack.relay.resume();
  };
  /** A restart: the faults end with the old process, the new one resumes what it stored. */
  const restart = (stack: Stack) => {
    stack.faults = {};
    startServices(stack, { resume: true });
  };
  const addStack = (name: string, seed: number): Stack => {
    const sk = new Uint8Array(32).fill(seed);
    const pubkey = bytesToHex(secp256k1.getPublicKey(sk, true), false);
    const db = openDatabase(':memory:', [invoiceSchema, paymentSchema, paymentLinkSchema]);
    const invoices = createInvoiceService({ db, nodeSecretKey: sk, currency: 'Fibd' });
    const stack = {
      name,
      sk,
      pubkey,
      db,
      invoices,
      faults: {},
      hidden: new Set(),
      saved: new Map(),
    } as unknown as Stack;
    startServices(stack);
    payerStack ??= stack;
    return stack;
  };
  const connect = (a: Stack, b: Stack, i: number, aSide: bigint, bSide: bigint) => {
    const ch: SimChannel = {
      id: `ch${i}`,
      outpoint: outpoint(i),
      a,
      b,
      balance: new Map([
        [a, aSide],
        [b, bSide],
      ]),
      tlcs: new Map(),
      nextTlc: 0n,
      refuse: 0,
    };
    channels.push(ch);
    return ch;
  };
  const balanceOf = (s: Stack) =>
    channels.filter((c) => c.a === s || c.b === s).reduce((x, c) => x + c.balance.get(s)!, 0n);
  return {
    addStack,
    connect,
    balanceOf,
    startServices,
    restart,
    /** A node announcement with these feature bytes, as every node's graph sees it. */
    announce: (s: Stack, features: Uint8Array) => nodeFeatures.set(s.pubkey, features),
    failures,
    pause: () => {
      paused = [];
    },
    resume: () => {
      const q = paused ?? [];
      paused = null;
      for (const f of q) setTimeout(f, 1);
    },
    pendingTlcs: () => channels.reduce((n, c) => n + c.tlcs.size, 0),
  };
}

/** A–B–D and A–C–D; A can send 60 CKB on each of its channels, B and C 500 CKB towards D. */
export function diamond(opts: { holdTimeoutMs?: number } = {}) {
  const net = buildNetwork(opts);
  const A = net.addStack('A', 1);
  const B = net.addStack('B', 2);
  const C = net.addStack('C', 3);
  const D = net.addStack('D', 4);
  const ab = net.connect(A, B, 1, 60n * CKB, 100n * CKB);
  const bd = net.connect(B, D, 2, 500n * CKB, 0n);
  const ac = net.connect(A, C, 3, 60n * CKB, 100n * CKB);
  const cd = net.connect(C, D, 4, 500n * CKB, 0n);
  return { net, A, B, C, D, ab, bd, ac, cd };
}

export async function waitFor(cond: () => boolean, what: string, ms = 10_000) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
