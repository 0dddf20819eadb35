/**
 * What watches a node from outside its services: the event log (`events.ts`) always, the
 * Prometheus metrics (`metrics.ts`) when `fiber.metrics_addr` is set. The composition root hands
 * it each service as it starts; it only subscribes to what the services already publish.
 */
import type { Channel, ChannelService, TlcNotice } from '../channel/index.ts';
import type { PeerManager } from '../p2p/index.ts';
import { PaymentStore, TlcLinks } from '../payment/index.ts';
import type { Db, StoreChange } from '../store/index.ts';
import { NodeEventLog } from './events.ts';
import type { Logger } from './log.ts';
import { type MetricsServer, NodeMetrics, startMetricsServer } from './metrics.ts';

export class NodeObservers {
  readonly events: NodeEventLog;
  /** Present when `fiber.metrics_addr` is set. */
  readonly metrics?: NodeMetrics;
  private server?: MetricsServer;
  private readonly unsubscribe: (() => void)[] = [];

  constructor(
    private readonly db: Db,
    private readonly log: Logger,
    private readonly metricsAddr?: string,
  ) {
    this.events = new NodeEventLog(log);
    if (metricsAddr) this.metrics = new NodeMetrics();
  }

  /** `http://host:port/metrics`, once served. */
  get metricsUrl(): string | undefined {
    return this.server?.url;
  }

  /** Serves `/metrics` (when configured) over the node's services. */
  async start(sources: {
    peers?: PeerManager;
    channels?: ChannelService;
    storeSyncs: () => number;
  }): Promise<void> {
    if (!this.metrics || !this.metricsAddr) return;
    const { peers, channels, storeSyncs } = sources;
    const payments = new PaymentStore(this.db);
    this.metrics.attach({
      peersCount: () => peers?.peersCount ?? 0,
      channels: () => channels?.list() ?? [],
      paymentCounts: () => payments.countByStatus(),
      storeSyncs,
    });
    this.server = await startMetricsServer(this.metricsAddr, this.metrics);
    this.log.info({ url: this.server.url }, 'metrics served');
  }

  /** A committed store change (payment sessions, invoices, preimages). */
  storeChange(change: StoreChange): void {
    this.events.storeChange(change);
    this.metrics?.storeChange(change);
  }

  /** The channel service's `onChange`: `first` (the graph's closing hook), then the event log. */
  channelHook(first?: (ch: Channel) => void): (ch: Channel) => void {
    return (ch) => {
      first?.(ch);
      this.events.channel(ch);
    };
  }

  /**
   * TLC news and group commits of the channels. Registered before the payment relay's listener,
   * so a fulfilled forward is seen while its link to the upstream TLC still exists.
   */
  watchChannels(channels: ChannelService): void {
    const links = new TlcLinks(this.db);
    this.unsubscribe.push(
      channels.onTlc((channelId, n) => {
        this.events.tlc(channelId, n);
        if (this.metrics) this.countForward(channels, links, channelId, n);
      }),
    );
    const metrics = this.metrics;
    if (metrics) channels.store.onCommit = (ms) => metrics.storeCommitted(ms);
  }

  /** Gossip received (sent ones are counted by `onGossipSent`, given to the peer manager). */
  watchPeers(peers: PeerManager): void {
    const metrics = this.metrics;
    if (metrics) this.unsubscribe.push(peers.onGossip(() => metrics.gossipMessageReceived()));
  }

  get onGossipSent(): (() => void) | undefined {
    const metrics = this.metrics;
    return metrics ? () => metrics.gossipSent.inc() : undefined;
  }

  get onPeerMessageSent(): ((kind: string) => void) | undefined {
    const metrics = this.metrics;
    return metrics ? (kind) => metrics.peerMessagesSent.inc({ type: kind }) : undefined;
  }

  get onRpcAnswered(): ((method: string, code: number) => void) | undefined {
    const metrics = this.metrics;
    return metrics ? (method, code) => metrics.rpcCall(method, code) : undefined;
  }

  async stop(): Promise<void> {
    for (const fn of this.unsubscribe.splice(0)) fn();
    await this.server?.close();
    this.server = undefined;
  }

  /**
   * An offered TLC fulfilled that was a forward, counted when its preimage arrives: the relay
   * claims upstream at once and drops the link once it has, before the round ends ('fulfilled').
   */
  private countForward(channels: ChannelService, links: TlcLinks, channelId: string, n: TlcNotice): void {
    if (n.type !== 'preimage' || !n.tlc.offered) return;
    const link = links.get(channelId, n.tlc.id);
    if (link?.kind !== 'forward') return;
    const upstream = channels.store.get(link.inChannelId);
    const incoming = upstream?.tlcs.find((t) => !t.offered && t.id === link.inTlcId);
    if (!upstream || !incoming) return;
    this.metrics?.forwarded({ inAmount: incoming.amount, outAmount: n.tlc.amount, udt: !!upstream.udt });
  }
}
