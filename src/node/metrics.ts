/**
 * Prometheus metrics of one node (`prom-client`), served as text on `GET /metrics` at
 * `fiber.metrics_addr` (fnn's field; off when unset). Nothing here steps into a service: gauges
 * read the services' state when scraped, counters are fed by the events the node already
 * publishes (store changes, channel changes and TLC news, RPC calls, group commits, gossip).
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Channel } from '../channel/index.ts';
import type { PeelMade } from '../payment/index.ts';
import { parseHostPort } from '../rpc/index.ts';
import type { StoreChange } from '../store/index.ts';
import { gcTotals } from './gc-stats.ts';

/** What the scrape-time gauges read. */
export interface MetricsSources {
  peersCount(): number;
  channels(): Channel[];
  /** Payment sessions in the store, by status. */
  paymentCounts(): Record<string, number>;
  /** Store flushes (fdatasync of the WAL) so far. */
  storeSyncs(): number;
}

/** A forward we took part in: the TLC we received and the one we offered for it. */
export interface Forward {
  inAmount: bigint;
  outAmount: bigint;
  udt: boolean;
}

const TERMINAL = new Set(['Success', 'Failed']);

export class NodeMetrics {
  readonly registry = new Registry();
  private sources?: MetricsSources;
  /** Non-final payment sessions seen, with the status last seen: a final status counts once. */
  private readonly openPayments = new Map<string, string>();

  private readonly paymentsDone = new Counter({
    name: 'strand_payments_completed_total',
    help: 'Payments sent by this node that ended, by final status',
    labelNames: ['status'],
    registers: [this.registry],
  });
  private readonly paymentSeconds = new Histogram({
    name: 'strand_payment_duration_seconds',
    help: 'From send_payment to the final status, of payments sent by this node',
    labelNames: ['status'],
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [this.registry],
  });
  private readonly forwards = new Counter({
    name: 'strand_forwarded_payments_total',
    help: 'TLCs forwarded by this node and settled (fulfilled downstream)',
    labelNames: ['asset'],
    registers: [this.registry],
  });
  private readonly forwardedAmount = new Counter({
    name: 'strand_forwarded_amount_total',
    help: 'Amount forwarded (what the next hop received), in shannons or token units',
    labelNames: ['asset'],
    registers: [this.registry],
  });
  private readonly forwardFees = new Counter({
    name: 'strand_forwarding_fees_total',
    help: 'Fees earned by forwarding (received minus forwarded), in shannons or token units',
    labelNames: ['asset'],
    registers: [this.registry],
  });
  private readonly rpcCalls = new Counter({
    name: 'strand_rpc_requests_total',
    help: 'JSON-RPC calls by method and result code (0: success)',
    labelNames: ['method', 'code'],
    registers: [this.registry],
  });
  private readonly commitSeconds = new Histogram({
    name: 'strand_store_commit_duration_seconds',
    help: 'Duration of one group commit of channel states to the store (one SQLite transaction)',
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    registers: [this.registry],
  });
  private readonly flushSeconds = new Histogram({
    name: 'strand_store_flush_duration_seconds',
    help: "Duration of one flush of the store's WAL (fdatasync), which every message depending on a commit waits for",
    buckets: [0.0002, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    registers: [this.registry],
  });
  private readonly onionPeels = new Counter({
    name: 'strand_onion_peels_total',
    help: "Received TLCs' onions peeled, by how: made ahead while the round went on (ahead), on commit with the ECDH made on the curve thread (point), on commit alone (none)",
    labelNames: ['made'],
    registers: [this.registry],
  });
  private readonly gossipReceived = new Counter({
    name: 'strand_gossip_messages_received_total',
    help: 'Gossip messages received from peers',
    registers: [this.registry],
  });
  readonly gossipSent = new Counter({
    name: 'strand_gossip_messages_sent_total',
    help: 'Gossip messages sent to peers',
    registers: [this.registry],
  });
  /**
   * Fiber messages sent to peers, by kind (AddTlc, CommitmentSigned, …): among other things, how
   * many TLC updates a CommitmentSigned carries on average (`bench:payments` prints it).
   */
  readonly peerMessagesSent = new Counter({
    name: 'strand_peer_messages_sent_total',
    help: 'Fiber messages sent to peers, by message type',
    labelNames: ['type'],
    registers: [this.registry],
  });

  constructor() {
    const self = this;
    gcTotals(); // the collections are counted from the node's start, not from the first scrape
    new Gauge({
      name: 'strand_peers_connected',
      help: 'Peers with an open session',
      registers: [this.registry],
      collect() {
        this.set(self.sources?.peersCount() ?? 0);
      },
    });
    new Gauge({
      name: 'strand_channels',
      help: 'Channels by state',
      labelNames: ['state'],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const ch of self.sources?.channels() ?? []) this.inc({ state: ch.state });
      },
    });
    new Gauge({
      name: 'strand_tlcs_pending',
      help: 'TLCs in the channels, not yet removed, by direction',
      labelNames: ['direction'],
      registers: [this.registry],
      collect() {
        let offered = 0;
        let received = 0;
        // As list_channels counts them: not being removed; a closed channel's are on chain.
        for (const ch of self.sources?.channels() ?? []) {
          if (ch.state === 'CLOSED') continue;
          for (const t of ch.tlcs) {
            if (t.removal) continue;
            if (t.offered) offered++;
            else received++;
          }
        }
        this.set({ direction: 'offered' }, offered);
        this.set({ direction: 'received' }, received);
      },
    });
    new Counter({
      name: 'strand_store_syncs_total',
      help: 'Store flushes (SQLite: fdatasync of the WAL; Postgres: the COMMIT of a turn): one covers every commit made before it',
      registers: [this.registry],
      collect() {
        this.reset();
        this.inc(self.sources?.storeSyncs() ?? 0);
      },
    });
    new Counter({
      name: 'strand_process_cpu_seconds_total',
      help: 'CPU time of the node process, user and system',
      registers: [this.registry],
      collect() {
        const u = process.cpuUsage();
        this.reset();
        this.inc((u.user + u.system) / 1e6);
      },
    });
    new Counter({
      name: 'strand_event_loop_cpu_seconds_total',
      help: "CPU time of the node's main thread, the event loop's, without its helper threads (Linux /proc schedstat; 0 elsewhere)",
      registers: [this.registry],
      collect() {
        this.reset();
        this.inc(eventLoopCpuSeconds());
      },
    });
    new Counter({
      name: 'strand_disk_write_bytes_total',
      help: 'Bytes the node process caused to be written to storage (Linux /proc/self/io; 0 elsewhere)',
      registers: [this.registry],
      collect() {
        this.reset();
        this.inc(diskWriteBytes());
      },
    });
    new Counter({
      name: 'strand_gc_collections_total',
      help: 'Garbage collections of the node thread, by kind (major: full mark-compact; minor: young generation)',
      labelNames: ['kind'],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [kind, t] of gcTotals()) this.inc({ kind }, t.count);
      },
    });
    new Counter({
      name: 'strand_gc_pause_seconds_total',
      help: 'Time the node thread was stopped for garbage collection, by kind',
      labelNames: ['kind'],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [kind, t] of gcTotals()) this.inc({ kind }, t.pauseMs / 1000);
      },
    });
    new Gauge({
      name: 'strand_payments',
      help: 'Payment sessions in the store, by status',
      labelNames: ['status'],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [status, n] of Object.entries(self.sources?.paymentCounts() ?? {}))
          this.set({ status }, n);
      },
    });
  }

  /** The services the gauges read; until set, they read zero. */
  attach(sources: MetricsSources): void {
    this.sources = sources;
  }

  /** A JSON-RPC call answered: `code` 0 for a result. Unknown method names share one label. */
  rpcCall(method: string, code: number): void {
    this.rpcCalls.inc({ method, code: String(code) });
  }

  storeCommitted(ms: number): void {
    this.commitSeconds.observe(ms / 1000);
  }

  onionPeeled(made: PeelMade): void {
    this.onionPeels.inc({ made });
  }

  storeFlushed(ms: number): void {
    this.flushSeconds.observe(ms / 1000);
  }

  gossipMessageReceived(): void {
    this.gossipReceived.inc();
  }

  /** A committed store change: payment sessions reaching their final status. */
  storeChange(change: StoreChange): void {
    if (!('PutPaymentSession' in change)) return;
    const { payment_hash: hash, payment_session } = change.PutPaymentSession;
    const s = payment_session as { status: string; created_at: number; last_updated_at: number };
    if (!TERMINAL.has(s.status)) {
      this.openPayments.set(hash, s.status);
      return;
    }
    // A session resumed after a restart, or saved again once final, was counted already (or
    // ended in another life of the process): only a session seen open here counts.
    if (!this.openPayments.delete(hash)) return;
    this.paymentsDone.inc({ status: s.status });
    this.paymentSeconds.observe({ status: s.status }, Math.max(0, s.last_updated_at - s.created_at) / 1000);
  }

  /** A TLC we offered for a forward was fulfilled: the forward earned its fee. */
  forwarded(f: Forward): void {
    const asset = f.udt ? 'udt' : 'ckb';
    this.forwards.inc({ asset });
    this.forwardedAmount.inc({ asset }, Number(f.outAmount));
    this.forwardFees.inc({ asset }, Number(f.inAmount - f.outAmount));
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }
}

/** `write_bytes` of /proc/self/io: what reached the block layer on this process's behalf. */
/**
 * The main thread's CPU time: what a node busy on its event loop is bound by. The process's CPU
 * also counts V8's compiler and collector threads, the store's checkpoint worker and the curve
 * worker, which run beside it on other cores (at 64 payments in flight, a fifth of the payer's
 * CPU early in a run). The first field of schedstat is nanoseconds on a CPU.
 */
function eventLoopCpuSeconds(): number {
  try {
    const ns = Number(fs.readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]);
    return Number.isFinite(ns) ? ns / 1e9 : 0;
  } catch {
    return 0;
  }
}

function diskWriteBytes(): number {
  try {
    const m = /^write_bytes: (\d+)$/m.exec(fs.readFileSync('/proc/self/io', 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

export interface MetricsServer {
  url: string;
  close(): Promise<void>;
}

/** Serves `GET /metrics` on `host:port`; everything else is 404. */
export async function startMetricsServer(addr: string, metrics: NodeMetrics): Promise<MetricsServer> {
  const { host, port } = parseHostPort(addr);
  const server = http.createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: GET /metrics\n');
      return;
    }
    metrics.text().then(
      (body) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(body),
      (e) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`${(e as Error).message}\n`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = (server.address() as AddressInfo).port;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${bound}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
