/**
 * `npm run bench:payments`: keysend payments per second on a devnet, measured from outside as an
 * application sees them — `send_payment` over HTTP, the outcome pushed by the payer's
 * `subscribe_store_changes` (no polling: a poll loop costs the payer as much CPU as a payment).
 *
 * Runs, each `BENCH_PAYMENTS` payments (default 200): one channel (alice → bob) one at a time
 * (latency p50/p99) and with `BENCH_CONCURRENCY` in flight (default "16,64"); then two hops
 * (alice → bob → carol, bob forwarding with a fee, routed over the gossiped graph) the same way.
 * Prints the machine's load average first: on a shared machine the figures move with it.
 * `BENCH_STORE=postgres`: the nodes keep their stores on a Postgres server started for the run.
 */
import os from 'node:os';
import path from 'node:path';
import WebSocket from 'ws';
import { startDevnet } from '../src/devnet/devnet.ts';
import { createRpcClient, type RpcClient } from '../src/rpc/client.ts';
import { tempDir } from '../test/helpers/node-process.ts';
import { freshDatabase, startPostgres } from '../test/helpers/postgres.ts';

const PAYMENTS = Number(process.env.BENCH_PAYMENTS ?? 200);
const CONCURRENCY = (process.env.BENCH_CONCURRENCY ?? '16,64').split(',').map(Number).filter(Boolean);

/** Payment outcomes pushed by the payer's store-change subscription, by payment hash. */
async function outcomes(rpcUrl: string) {
  const ws = new WebSocket(rpcUrl.replace(/^http/, 'ws'));
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  const done = new Map<string, string>();
  const waiting = new Map<string, (status: string) => void>();
  ws.on('message', (data) => {
    const msg = JSON.parse(data.toString());
    const s = msg.params?.result?.PutPaymentSession;
    if (!s) return;
    const status = s.payment_session?.status as string;
    if (status !== 'Success' && status !== 'Failed') return;
    const w = waiting.get(s.payment_hash);
    if (w) {
      waiting.delete(s.payment_hash);
      w(status);
    } else done.set(s.payment_hash, status);
  });
  ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'subscribe_store_changes', params: [] }));
  return {
    /** Resolves with the payment's final status (it may already have arrived). */
    wait(hash: string): Promise<string> {
      const s = done.get(hash);
      if (s) {
        done.delete(hash);
        return Promise.resolve(s);
      }
      return new Promise((resolve) => waiting.set(hash, resolve));
    },
    close: () => ws.close(),
  };
}

type Outcomes = Awaited<ReturnType<typeof outcomes>>;

/** One keysend; its latency in ms, or throws with the failure. */
async function pay(alice: RpcClient, feed: Outcomes, target: string): Promise<number> {
  const t0 = performance.now();
  let hash = '';
  const giveUp = Date.now() + 60_000;
  while (!hash) {
    try {
      ({ payment_hash: hash } = await alice.call('send_payment', {
        target_pubkey: target,
        amount: '0x2710',
        keysend: true,
      }));
    } catch (e) {
      // Right after the channels are ready the route may not be known yet (the seed's rule).
      if (!/Failed to build route/.test((e as Error).message) || Date.now() > giveUp) throw e;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  const status = await feed.wait(hash);
  if (status !== 'Success') throw new Error(`payment ${status}`);
  return performance.now() - t0;
}

const pct = (xs: number[], p: number) =>
  xs.length
    ? [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))]!
    : NaN;

/** `n` payments with `inFlight` at once: completed per second, latencies, failures. */
async function run(alice: RpcClient, feed: Outcomes, target: string, inFlight: number) {
  const lat: number[] = [];
  const failed: string[] = [];
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < PAYMENTS) {
        next++;
        await pay(alice, feed, target).then(
          (ms) => lat.push(ms),
          (e: Error) => failed.push(e.message),
        );
      }
    }),
  );
  const rate = (lat.length * 1000) / (performance.now() - t0);
  const fails = failed.length ? `; ${failed.length} failed (${[...new Set(failed)].join('; ')})` : '';
  return `${inFlight} in flight: ${rate.toFixed(1)}/s, p50 ${pct(lat, 50).toFixed(1)} ms, p99 ${pct(lat, 99).toFixed(1)} ms${fails}`;
}

console.log(
  `load average ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')} on ${os.cpus().length} cores; ${PAYMENTS} keysends per run`,
);
const pgServer = process.env.BENCH_STORE === 'postgres' ? await startPostgres() : undefined;
const urls = new Map<string, string>();
if (pgServer) for (const n of ['alice', 'bob', 'carol']) urls.set(n, await freshDatabase(pgServer));
console.log(`store: ${pgServer ? 'postgres' : 'sqlite'}`);
const net = await startDevnet({
  dir: path.join(tempDir('strand-bench-pay-'), 'net'),
  nodes: 3,
  blockIntervalMs: 200,
  basePort: 40_000 + Math.floor(Math.random() * 10_000),
  // A line: alice knows of bob–carol only through bob's gossip (she is not peered with carol).
  topology: {
    peers: [
      ['alice', 'bob'],
      ['bob', 'carol'],
    ],
    channels: [
      { from: 'alice', to: 'bob', funding: 5000, udt: false, public: true },
      { from: 'bob', to: 'carol', funding: 5000, udt: false, public: true },
    ],
  },
  reset: true,
  store: pgServer ? (node) => ({ url: urls.get(node) }) : undefined,
  log: () => {},
});
const nodes = net.description.nodes;
const alice = createRpcClient(nodes[0]!.rpc_url);
const feed = await outcomes(nodes[0]!.rpc_url);
try {
  for (const [label, target] of [
    ['one channel (alice → bob)', nodes[1]!.pubkey],
    ['two hops (alice → bob → carol)', nodes[2]!.pubkey],
  ] as const) {
    for (let i = 0; i < 10; i++) await pay(alice, feed, target); // warm-up (and the route)
    console.log(`${label}:`);
    for (const n of [1, ...CONCURRENCY]) console.log(`  ${await run(alice, feed, target, n)}`);
  }
} finally {
  feed.close();
  await net.stop();
  await pgServer?.stop();
}
