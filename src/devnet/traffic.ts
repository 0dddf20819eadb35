/**
 * `strand devnet traffic`: payments across a running devnet's channels at a steady rate, as SimLN
 * does for Lightning. Each payment is a real invoice of the payee paid by the payer over whatever
 * route the payer finds; its latency is the payer's own record (`last_updated_at - created_at`),
 * so polling does not blur it.
 */
import { toHexQuantity } from '../codec/index.ts';
import { createRpcClient, type RpcClient } from '../rpc/index.ts';
import type { DevnetNodeInfo } from './devnet.ts';
import { type Outcome, TrafficStats, type TrafficSummary } from './traffic-stats.ts';

export type TrafficPattern = 'random' | 'hub';

export interface TrafficOptions {
  nodes: DevnetNodeInfo[];
  tps: number;
  durationS: number;
  pattern: TrafficPattern;
  /** Amount of each payment, in shannons. */
  amount: bigint;
  /** At most this many payments in flight; a tick beyond it is skipped and counted. */
  maxInFlight: number;
  /** How long to wait, after the last send, for the payments still in flight. */
  drainS: number;
  /** A progress line (about once a second) and the end. */
  progress: (summary: TrafficSummary) => void;
  random?: () => number;
}

interface Party {
  node: DevnetNodeInfo;
  client: RpcClient;
}

const POLL_MS = 200;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const bare = (key: string) => key.replace(/^0x/, '').toLowerCase();

/**
 * Who pays whom: nodes of the largest connected part of the public graph (as the first node sees
 * it), so every pair has a route. `hub`: the node with the most channels is at one end of every
 * payment, the other end picked at random, each direction half of the time.
 */
export async function planPairs(
  parties: Party[],
  pattern: TrafficPattern,
): Promise<{ members: Party[]; hub?: Party }> {
  const { channels } = await parties[0]!.client.call('graph_channels', { limit: '0x1f4' });
  const edges = (channels as { node1: string; node2: string }[]).map((c) => [bare(c.node1), bare(c.node2)]);
  const byKey = new Map(parties.map((p) => [bare(p.node.pubkey), p]));
  const adjacency = new Map<string, Set<string>>();
  for (const [a, b] of edges) {
    if (!byKey.has(a!) || !byKey.has(b!)) continue;
    adjacency.set(a!, (adjacency.get(a!) ?? new Set()).add(b!));
    adjacency.set(b!, (adjacency.get(b!) ?? new Set()).add(a!));
  }
  let best: string[] = [];
  const seen = new Set<string>();
  for (const start of adjacency.keys()) {
    if (seen.has(start)) continue;
    const part = [start];
    seen.add(start);
    for (let i = 0; i < part.length; i++) {
      for (const next of adjacency.get(part[i]!) ?? []) {
        if (!seen.has(next)) {
          seen.add(next);
          part.push(next);
        }
      }
    }
    if (part.length > best.length) best = part;
  }
  if (best.length < 2) {
    throw new Error('no two devnet nodes are joined by announced channels yet (wait for the graph to sync)');
  }
  const members = best.map((k) => byKey.get(k)!);
  if (pattern === 'random') return { members };
  const hub = members.reduce((a, b) =>
    (adjacency.get(bare(b.node.pubkey))?.size ?? 0) > (adjacency.get(bare(a.node.pubkey))?.size ?? 0) ? b : a,
  );
  return { members, hub };
}

function pickPair(members: Party[], hub: Party | undefined, random: () => number): [Party, Party] {
  const pick = (from: Party[]) => from[Math.floor(random() * from.length)]!;
  if (hub) {
    const other = pick(members.filter((m) => m !== hub));
    return random() < 0.5 ? [hub, other] : [other, hub];
  }
  const payer = pick(members);
  return [payer, pick(members.filter((m) => m !== payer))];
}

/** One payment, from invoice to final status. */
async function pay(payer: Party, payee: Party, amount: bigint, deadline: () => number): Promise<Outcome> {
  let hash: string;
  try {
    const { invoice_address } = await payee.client.call('new_invoice', {
      amount: toHexQuantity(amount),
      currency: 'Fibd',
      description: 'devnet traffic',
    });
    ({ payment_hash: hash } = await payer.client.call('send_payment', { invoice: invoice_address }));
  } catch (e) {
    return { kind: 'rejected', reason: (e as Error).message };
  }
  for (;;) {
    const p = await payer.client.call('get_payment', { payment_hash: hash });
    if (p.status === 'Success') {
      return {
        kind: 'success',
        latencyMs: Number(BigInt(p.last_updated_at) - BigInt(p.created_at)),
        fee: BigInt(p.fee),
      };
    }
    if (p.status === 'Failed') return { kind: 'failed', reason: String(p.failed_error ?? 'unknown') };
    if (Date.now() > deadline()) return { kind: 'failed', reason: 'unfinished' };
    await sleep(POLL_MS);
  }
}

export async function runTraffic(opts: TrafficOptions): Promise<TrafficSummary> {
  const random = opts.random ?? Math.random;
  const parties = opts.nodes.map((node) => ({ node, client: createRpcClient(node.rpc_url) }));
  const { members, hub } = await planPairs(parties, opts.pattern);
  const startedAt = Date.now();
  const stats = new TrafficStats(startedAt);
  const endAt = startedAt + opts.durationS * 1000;
  // Payments still in flight this long after the last send are given up on (counted unfinished).
  const giveUpAt = () => endAt + opts.drainS * 1000;
  const running = new Set<Promise<void>>();
  const ticker = setInterval(() => opts.progress(stats.summary(Date.now())), 1000);
  try {
    const interval = 1000 / opts.tps;
    for (let i = 0; ; i++) {
      const due = startedAt + i * interval;
      if (due >= endAt) break;
      await sleep(Math.max(0, due - Date.now()));
      if (stats.inFlight >= opts.maxInFlight) {
        stats.skipped++;
        continue;
      }
      const [payer, payee] = pickPair(members, hub, random);
      stats.sent++;
      stats.inFlight++;
      const run = pay(payer, payee, opts.amount, giveUpAt).then((outcome) => {
        // A payment given up on stays unfinished: it is neither a success nor a failure yet.
        if (!(outcome.kind === 'failed' && outcome.reason === 'unfinished')) {
          stats.inFlight--;
          stats.record(outcome);
        }
      });
      running.add(run);
      void run.finally(() => running.delete(run));
    }
    await Promise.all(running);
  } finally {
    clearInterval(ticker);
  }
  const summary = stats.summary(Date.now());
  opts.progress(summary);
  return summary;
}
