/**
 * `npm run bench:route`: path-finding time per query (`findPath`, the reference's Dijkstra from
 * target to source with fees, expiry deltas and probabilities) on synthetic graphs of 200 nodes /
 * 2,000 channels and 10,000 nodes / 100,000 channels. Channels join random pairs (seeded PRNG)
 * with random capacities, fee rates and deltas, 2% of directions disabled, 1% of channels with a
 * payment-history record; each query pays 1 CKB between two random nodes (fee cap 0.5%). The
 * graph caches each node's sorted inbound edges, so the first queries also fill that cache.
 * Prints mean, p50 and p99 per query and the share of queries that found a route.
 */
import { PaymentHistory } from '../src/graph/history.ts';
import { NetworkGraph } from '../src/graph/network-graph.ts';
import { findPath, PathFindError } from '../src/graph/pathfind.ts';
import { prng } from '../test/helpers/prng.ts';

const QUERIES = Number(process.env.BENCH_QUERIES ?? 200);

const nodeId = (i: number) => '02' + i.toString(16).padStart(64, '0');
const outpoint = (i: number) => '0x' + i.toString(16).padStart(72, '0');

function buildGraph(nodes: number, channels: number, rnd: () => number): NetworkGraph {
  const g = new NetworkGraph(nodeId(0));
  const policy = () => ({
    timestamp: BigInt(1_700_000_000_000 + Math.floor(rnd() * 1e6)),
    enabled: rnd() > 0.02,
    outboundLiquidity: null,
    tlcExpiryDelta: BigInt(9_600_000 + Math.floor(rnd() * 4_800_000)),
    tlcMinimumValue: 0n,
    feeRate: BigInt(Math.floor(rnd() * 5000)),
  });
  for (let c = 0; c < channels; c++) {
    // every node gets at least one channel (a ring), the rest join random pairs
    const a = c < nodes ? c : Math.floor(rnd() * nodes);
    let b = c < nodes ? (c + 1) % nodes : Math.floor(rnd() * nodes);
    if (b === a) b = (a + 1) % nodes;
    const [n1, n2] = [nodeId(a), nodeId(b)].sort();
    g.putChannel({
      outpoint: outpoint(c),
      node1: n1!,
      node2: n2!,
      capacity: BigInt(Math.floor(5e8 + rnd() * 1e11)),
      createdTimestamp: 1_700_000_000_000n,
      chainHash: '',
      udtTypeScript: null,
      update1: policy(),
      update2: policy(),
      own: false,
    });
  }
  return g;
}

function run(nodes: number, channels: number): void {
  const rnd = prng(nodes * 31 + channels);
  const t0 = performance.now();
  const g = buildGraph(nodes, channels, rnd);
  const buildMs = performance.now() - t0;
  // 1% of the channels carry a payment-history record (recent failures and successes)
  const history = new PaymentHistory();
  for (let c = 0; c < channels / 100; c++) {
    const op = outpoint(Math.floor(rnd() * channels));
    const amount = BigInt(Math.floor(rnd() * 1e10));
    history.applyPairResult(
      op,
      rnd() < 0.5 ? 'forward' : 'backward',
      amount,
      rnd() < 0.5,
      1_700_000_000_000 - 600_000,
    );
  }
  const times: number[] = [];
  let found = 0;
  let hops = 0;
  for (let q = 0; q < QUERIES + 10; q++) {
    const s = Math.floor(rnd() * nodes);
    let t = Math.floor(rnd() * nodes);
    if (t === s) t = (s + 1) % nodes;
    const start = performance.now();
    try {
      const route = findPath(g, {
        source: nodeId(s),
        target: nodeId(t),
        amount: 100_000_000n,
        maxFeeAmount: 500_000n,
        finalTlcExpiryDelta: 86_400_000,
        tlcExpiryLimit: 1_209_600_000,
        history,
        now: 1_700_000_000_000,
      });
      if (q >= 10) {
        found++;
        hops += route.length;
      }
    } catch (e) {
      if (!(e instanceof PathFindError)) throw e;
    }
    if (q >= 10) times.push(performance.now() - start); // the first 10 warm up
  }
  times.sort((a, b) => a - b);
  const mean = times.reduce((a, b) => a + b, 0) / times.length;
  const pct = (p: number) => times[Math.min(times.length - 1, Math.floor((p / 100) * times.length))]!;
  console.log(
    `${nodes} nodes / ${channels} channels (graph built in ${buildMs.toFixed(0)} ms): ` +
      `${QUERIES} queries, mean ${mean.toFixed(2)} ms, p50 ${pct(50).toFixed(2)} ms, p99 ${pct(99).toFixed(2)} ms, ` +
      `${((found / QUERIES) * 100).toFixed(0)}% routed, ${(hops / Math.max(found, 1)).toFixed(1)} hops on average`,
  );
}

console.log(`bench:route — findPath per query (Node ${process.version})`);
run(200, 2_000);
run(10_000, 100_000);
