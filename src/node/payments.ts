/**
 * Wires payments into a node: the payment sessions (send_payment …), the relay that handles the
 * TLCs of the node's channels, the routes from the network graph (with the node's own ready
 * channels kept in it), and the invoices a final hop checks against.
 */

import type { Channel, ChannelService, Tlc } from '../channel/index.ts';
import { SIDE_FLOOR } from '../channel/index.ts';
import { bytesToHex, HASH_TYPE_BYTE, hexToBytes } from '../codec/index.ts';
import type { GraphService } from '../graph/index.ts';
import { PathFindError } from '../graph/index.ts';
import type { InvoiceService } from '../invoice/index.ts';
import { payeeOf } from '../invoice/index.ts';
import {
  channelTlcPort,
  EcdhAhead,
  type IncomingTlc,
  OnionPrePeeler,
  PaymentRelay,
  PaymentService,
  PaymentStore,
  type PeelMade,
  SessionKeyPool,
  TlcLinks,
} from '../payment/index.ts';
import type { Db, StoreChangeBus } from '../store/index.ts';
import type { Logger } from './log.ts';

export interface PaymentWiring {
  db: Db;
  nodeSecretKey: Uint8Array;
  nodePubkey: string;
  channels: ChannelService;
  graph?: GraphService;
  invoices: InvoiceService;
  changes: StoreChangeBus;
  /** The least TLC expiry delta (`codec/epoch-rules.ts`), for requests and forwards. */
  minTlcExpiryDelta?: bigint;
  /** The relay is failing a received TLC with this onion error code (the event log). */
  onFailing?: (channelId: string, tlcId: bigint, code: string) => void;
  /**
   * Runs `fn` once the output offered so far has left the node (`OnionPrePeeler`); default: the
   * next turn of the event loop.
   */
  afterOutput?: (fn: () => void) => void;
  /** How each committed TLC's onion peel was made (metrics, `OnionPrePeeler`). */
  onPeel?: (made: PeelMade) => void;
  log: Logger;
}

export function wirePayments(w: PaymentWiring): {
  payments: PaymentService;
  relay: PaymentRelay;
  stop(): void;
} {
  const port = channelTlcPort(w.channels);
  let relay: PaymentRelay | undefined;
  const sessionKeys = new SessionKeyPool({
    onUnavailable: (reason) =>
      w.log.info({ reason }, 'onion session keys are made with each payment, not ahead'),
  });
  const payments = new PaymentService({
    sessionKeys,
    store: new PaymentStore(w.db),
    nodePubkey: w.nodePubkey,
    router: {
      findRoute: (req) => graphOf(w).findRoute(req),
      findRouteInRange: (req, lowBound) => graphOf(w).findRouteInRange(req, lowBound),
      maxRoutableAmount: (req) => graphOf(w).maxRoutableAmount(req),
      nodeFeatures: (node) => w.graph?.graph.node(node)?.announcement.features,
    },
    tlc: { sendTlc: (t) => relay!.outbox().sendTlc(t) },
    invoices: {
      parseInvoice: (s) => w.invoices.parseInvoice(s),
      // parse_invoice refuses a bad signature already.
      verifyInvoice: () => true,
      payeeOf: (inv) => {
        const pk = payeeOf(inv);
        return pk ? bytesToHex(pk, false) : undefined;
      },
    },
    ...(w.graph
      ? {
          feedback: {
            success: (nodes) => w.graph!.recordPaymentSuccess(nodes),
            failure: (nodes, failure) => w.graph!.recordPaymentFailure(nodes, failure),
          },
        }
      : {}),
    onChange: (c) => w.changes.publish(c),
    localFeeRate: (outpoint) => port.channelByFundingTx(outpoint.slice(0, 66))?.policy.feeRate,
    minTlcExpiryDelta: w.minTlcExpiryDelta,
    logger: w.log,
  });
  const links = new TlcLinks(w.db);
  const ecdh = new EcdhAhead(w.nodeSecretKey, undefined, (reason) =>
    w.log.info({ reason }, 'onions are peeled on the node thread alone'),
  );
  const prePeeler = new OnionPrePeeler(
    w.nodeSecretKey,
    w.afterOutput ?? ((fn) => setImmediate(fn)),
    ecdh,
    w.onPeel,
  );
  relay = new PaymentRelay({
    prePeeled: prePeeler,
    nodeSecretKey: w.nodeSecretKey,
    nodePubkey: w.nodePubkey,
    channels: port,
    links,
    invoices: w.invoices,
    payments,
    minTlcExpiryDelta: w.minTlcExpiryDelta,
    onFailing: w.onFailing,
    logger: w.log,
  });
  const r = relay;
  const fail = (what: string) => (err: unknown) => w.log.error({ err: (err as Error).message }, what);
  // The channels' TLC expiry check asks the payments layer what it knows of received TLCs.
  w.channels.expiry.hooks = {
    preimageFor: (channelId, t) => r.preimageFor(channelId, t),
    // Forwarded TLCs follow their next hop; held ones wait for settle/cancel until expiry nears.
    forwarded: (channelId, t) => links.forwardedFrom(channelId, t.id),
    // Not awaited: the fail waits for the channel's round (a peer reconnecting), and the check
    // of every other channel must not wait with it.
    failExpiring: async (channelId, t) => {
      void r.failExpiring(incomingTlc(channelId, t)).catch(fail('failing a TLC near its expiry failed'));
    },
  };
  // Sessions and outcomes a stop (or a crash) cut short, before any channel event arrives.
  r.resume();
  const stopRecording = w.channels.onTlcRecord((channelId, n) => {
    if (!n.tlc.offered) {
      // Paid with the state whose RemoveTlc gives the preimage, before the payer can have it.
      if (n.type === 'preimage' || n.type === 'fulfilled') r.recordReceivedFulfilled(n.tlc.paymentHash);
      return;
    }
    // The preimage is recorded with the state that first holds it (the peer's RemoveTlc), not
    // only with the one that ends the round: the relay acts on it from then on.
    if (n.type === 'preimage' || n.type === 'fulfilled')
      r.recordOutcome(channelId, n.tlc.id, { preimage: hexToBytes(n.preimage) });
    else if (n.type === 'failed') r.recordOutcome(channelId, n.tlc.id, { errorPacket: hexToBytes(n.error) });
  });
  const stop = w.channels.onTlc((channelId, n) => {
    const t = n.tlc;
    if (n.type === 'announced' && !t.offered) {
      prePeeler.announced(t);
    } else if (n.type === 'received' && !t.offered) {
      void r.onIncoming(incomingTlc(channelId, t)).catch(fail('incoming TLC handling failed'));
    } else if ((n.type === 'preimage' || n.type === 'fulfilled') && t.offered) {
      // Usually the preimage came first and was delivered: the link is gone and this does nothing.
      void r
        .onFulfilled(channelId, t.id, hexToBytes(n.preimage, 'preimage'))
        .catch(fail('fulfil relay failed'));
    } else if (n.type === 'dropped') {
      void r.onDropped(channelId, t.id).catch(fail('dropped TLC relay failed'));
    } else if (n.type === 'failed' && t.offered) {
      void r.onFailed(channelId, t.id, hexToBytes(n.error, 'error')).catch(fail('failure relay failed'));
    }
  });
  // MPP parts held past their hold time are failed back (the reference checks periodically too).
  const holdTimer = setInterval(() => void r.expireHolds().catch(fail('held TLC expiry failed')), 1000);
  holdTimer.unref();
  return {
    payments,
    relay,
    stop: () => {
      sessionKeys.stop();
      ecdh.stop();
      clearInterval(holdTimer);
      stop();
      stopRecording();
    },
  };
}

/** The graph to route over, with our own ready channels brought up to date first. */
function graphOf(w: PaymentWiring): GraphService {
  if (!w.graph) throw new PathFindError('NoPathFound', 'PathFind error: no path found');
  syncOwnChannels(w.channels, w.graph);
  return w.graph;
}

/** A TLC the peer offered us, as the relay takes it. */
function incomingTlc(channelId: string, t: Tlc): IncomingTlc {
  return {
    channelId,
    tlcId: t.id,
    amount: t.amount,
    paymentHash: t.paymentHash,
    expiry: t.expiry,
    hashAlgorithm: t.hashAlgorithm,
    onion: t.onion,
  };
}

function spendable(ch: Channel): bigint {
  if (ch.udt) return ch.localBalance;
  const above = ch.localBalance + ch.local.reserve - SIDE_FLOOR;
  return above > 0n ? above : 0n;
}

/** Our ready channels, with our exact balance, as the path finder must see them. */
export function syncOwnChannels(channels: ChannelService, graph: GraphService): void {
  for (const ch of channels.store.list()) {
    // Closing or closed (perhaps while the node was down): not ours to route through any more.
    if ((ch.state === 'SHUTTING_DOWN' || ch.state === 'CLOSED') && ch.fundingTxHash)
      graph.ownChannelDown(`${ch.fundingTxHash}00000000`);
    if (ch.state !== 'CHANNEL_READY' || !ch.fundingTxHash || !ch.remote) continue;
    const info = (balance: bigint, p: { tlcExpiryDelta: bigint; tlcMinValue: bigint; feeRate: bigint }) => ({
      timestamp: BigInt(ch.createdAt),
      enabled: ch.enabled,
      outboundLiquidity: balance,
      tlcExpiryDelta: p.tlcExpiryDelta,
      tlcMinimumValue: p.tlcMinValue,
      feeRate: p.feeRate,
    });
    graph.ownChannelUp({
      outpoint: `${ch.fundingTxHash}00000000`,
      peer: ch.peer,
      capacity: ch.localBalance + ch.remoteBalance,
      udtTypeScript: ch.udt
        ? {
            codeHash: hexToBytes(ch.udt.codeHash),
            hashType: HASH_TYPE_BYTE[ch.udt.hashType] ?? 0,
            args: hexToBytes(ch.udt.args),
          }
        : null,
      // What we may actually send: never below the floor a settlement cell needs.
      local: info(spendable(ch), {
        tlcExpiryDelta: ch.tlcExpiryDelta,
        tlcMinValue: ch.tlcMinValue,
        feeRate: ch.tlcFeeProportionalMillionths,
      }),
      // The peer's policy is known to us only through its channel update; until then, none.
      remote: null,
    });
  }
}
