/**
 * `npm run bench:payments`: keysend payments per second on a devnet, measured from outside as an
 * application sees them — `send_payment` over JSON-RPC (over HTTP, or on the WebSocket with
 * `BENCH_RPC=ws`), the outcome pushed by the payer's `subscribe_store_changes` (no polling: a
 * poll loop costs the payer as much CPU as a payment).
 *
 * Runs, each measuring `BENCH_PAYMENTS` payments (default 200): one channel (alice → bob) one at a
 * time (latency p50/p99) and with `BENCH_CONCURRENCY` in flight (default "16,64"); then two hops
 * (alice → bob → carol, bob forwarding with a fee, routed over the gossiped graph) the same way.
 * Each path is warmed up first (`BENCH_WARMUP` payments, default 2,000, not measured). A run with
 * more than one in flight measures its steady state: the payments that end after a lead-in at its
 * own level (`BENCH_LEAD_IN`, default 16 × the level), while new ones keep the level full. Prints the
 * machine's load average first: on a shared machine the figures move with it.
 * `BENCH_STORE=postgres`: the nodes keep their stores on a Postgres server started for the run.
 *
 * Per run, the cost per payment on each node, from its Prometheus metrics (read before and after):
 * CPU ms (and of it the garbage collector's pauses, with the full collections made a thousand
 * payments), store flushes (fdatasync), KB written to disk, and the CommitmentSigneds it sent with the
 * TLC updates each carried on average (how well its rounds batch), and the machine's speed just before
 * the run (k·G a second on this process's core, the nodes idle): on a shared machine it moves by half
 * within an hour, and the rates move with it. Then the machine's curve ceiling (k·G
 * and Schnorr verifications per second on the backend the nodes use) and the ratio of the best
 * rate to it. The last line is one JSON summary.
 *
 * `BENCH_PROFILE=S`: during each run with more than one payment in flight, every node involved
 * records an S-second CPU profile (the `prof` module's `pprof`); the paths are printed.
 */
import { readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import * as nobleSchnorr from '@noble/curves/secp256k1.js';
import WebSocket from 'ws';
import { curve, schnorrVerify } from '../src/crypto/index.ts';
import { startDevnet } from '../src/devnet/devnet.ts';
import { createRpcClient, type RpcClient } from '../src/rpc/client.ts';
import { tempDir } from '../test/helpers/node-process.ts';
import { devnetBasePort } from '../test/helpers/ports.ts';
import { freshDatabase, startPostgres } from '../test/helpers/postgres.ts';
import { LINE_TOPOLOGY } from './line-topology.ts';

const PAYMENTS = Number(process.env.BENCH_PAYMENTS ?? 200);
const CONCURRENCY = (process.env.BENCH_CONCURRENCY ?? '16,64').split(',').map(Number).filter(Boolean);
const PROFILE_SECS = Number(process.env.BENCH_PROFILE ?? 0);
/** Profile the one-at-a-time runs too (`BENCH_PROFILE_ONE=1`). */
const PROFILE_ONE = !!process.env.BENCH_PROFILE_ONE;
/** Leave out the one-at-a-time runs (`BENCH_SKIP_ONE=1`: long concurrent runs for a profile). */
const SKIP_ONE = !!process.env.BENCH_SKIP_ONE;
/**
 * Payments made over each path before its runs, 16 at a time, and not measured (`BENCH_WARMUP`):
 * the nodes' hot code is optimised by V8 only after some thousands of calls, and a node runs for
 * days. Without it the first runs of a fresh devnet measure the compiler as much as the node
 * (600 was not enough: one channel at 64 in flight, the same tree, ~500–560/s after 600 and
 * ~620–630/s after 2,000).
 */
const WARMUP = Number(process.env.BENCH_WARMUP ?? 2000);
/**
 * How `send_payment` is called (`BENCH_RPC`): `http` (the default), one POST per call on
 * kept-alive connections; `ws`, on the WebSocket the client already holds for the pushes, as a
 * payment processor may keep one connection open (the node, like fnn, serves JSON-RPC over HTTP
 * and WebSocket on the same address). On the final tree of the session that added it the two
 * gave the same rates within the machine's noise.
 */
const RPC_TRANSPORT = process.env.BENCH_RPC === 'ws' ? 'ws' : 'http';
/**
 * A pause after each payment of the one-at-a-time runs (`BENCH_GAP_MS`, default 0): with none, a
 * payment starts while the previous one's settling rounds are still running on the channels (as
 * a wallet paying again at once would see); with a pause, each payment meets idle channels.
 */
const GAP_MS = Number(process.env.BENCH_GAP_MS ?? 0);
/**
 * `BENCH_LATENCIES=<dir>`: each run's payments written to `<dir>/<path>-<in flight>.json` as
 * `[end, latency]` pairs (ms; end from the run's start), to see when the slow ones came.
 */
const LATENCIES_DIR = process.env.BENCH_LATENCIES;
/** The nodes offer pipelined TLC updates (`BENCH_PIPELINED=1`, `fiber.pipelined_updates`). */
const PIPELINED = !!process.env.BENCH_PIPELINED;

/** Payment outcomes pushed by the payer's store-change subscription, by payment hash. */
async function outcomes(rpcUrl: string) {
  const ws = new WebSocket(rpcUrl.replace(/^http/, 'ws'));
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  const done = new Map<string, string>();
  const waiting = new Map<string, (status: string) => void>();
  const calls = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  let nextId = 2;
  ws.on('message', (data) => {
    const msg = JSON.parse(data.toString());
    if (msg.id !== undefined && msg.id !== 1) {
      const c = calls.get(msg.id);
      calls.delete(msg.id);
      if (msg.error) c?.reject(new Error(msg.error.message));
      else c?.resolve(msg.result);
      return;
    }
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
    /** A JSON-RPC call on this WebSocket (answers are told from pushes by their id). */
    call<T = any>(method: string, params: unknown): Promise<T> {
      return new Promise((resolve, reject) => {
        const id = nextId++;
        calls.set(id, { resolve: resolve as (v: unknown) => void, reject });
        ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params: [params] }));
      });
    },
  };
}

type Outcomes = Awaited<ReturnType<typeof outcomes>>;

/** One keysend; its latency in ms, or throws with the failure. */
async function pay(alice: Pick<RpcClient, 'call'>, feed: Outcomes, target: string): Promise<number> {
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

/** The counters of a node that say what its payments cost. */
async function costCounters(metricsUrl: string) {
  const text = await (await fetch(metricsUrl)).text();
  const read = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
  // A series with a label value not seen yet has no line: zero.
  const labelled = (name: string, label: string, value: string) =>
    Number(new RegExp(`^${name}\\{${label}="${value}"\\} (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
  const sent = (type: string) => labelled('strand_peer_messages_sent_total', 'type', type);
  // Every kind's pauses, whatever kinds the node reports.
  const gcPauseS = [...text.matchAll(/^strand_gc_pause_seconds_total\{[^}]*\} (\S+)$/gm)].reduce(
    (a, m) => a + Number(m[1]),
    0,
  );
  return {
    cpuMs: read('strand_process_cpu_seconds_total') * 1000,
    eventLoopMs: read('strand_event_loop_cpu_seconds_total') * 1000,
    majorGcs: labelled('strand_gc_collections_total', 'kind', 'major'),
    gcPauseMs: gcPauseS * 1000,
    syncs: read('strand_store_syncs_total'),
    // The WAL flushes' time (SQLite; absent on Postgres: 0).
    flushMs: (Number(/^strand_store_flush_duration_seconds_sum (\S+)$/m.exec(text)?.[1] ?? 0) || 0) * 1000,
    diskKb: read('strand_disk_write_bytes_total') / 1024,
    commitments: sent('CommitmentSigned'),
    updates: sent('AddTlc') + sent('RemoveTlc'),
  };
}
type Cost = Awaited<ReturnType<typeof costCounters>>;

/**
 * CPU ms the whole machine has spent (every process: the nodes, the dev chain, this client), from
 * /proc/stat, and of it the time the hypervisor gave to other guests (steal); NaN where there is
 * none. With the cores' count the busy time bounds the rate: a machine whose processes spend
 * 2.5 ms a payment cannot pass 800/s on two cores, however the work is spread. Steal tells a run
 * slowed by a neighbour from a run slowed by the code.
 */
async function machineCpuMs(): Promise<{ busy: number; steal: number }> {
  try {
    const line = (await readFile('/proc/stat', 'utf8')).split('\n')[0]!;
    // cpu  user nice system idle iowait irq softirq steal …
    const f = line.trim().split(/\s+/).slice(1).map(Number);
    const steal = f[7] ?? 0;
    const busy = f[0]! + f[1]! + f[2]! + f[5]! + f[6]! + steal;
    // USER_HZ is 100 on Linux
    return { busy: (busy * 1000) / 100, steal: (steal * 1000) / 100 };
  } catch {
    return { busy: NaN, steal: NaN };
  }
}

interface RunResult {
  inFlight: number;
  rate: number;
  p50: number;
  p99: number;
  failed: number;
  /** Per node, per completed payment. */
  cost: Record<string, Cost>;
  /** CPU ms per completed payment: the whole machine, and this client (HTTP calls, the feed). */
  machineMs: number;
  /** Of the machine's, ms per payment stolen by the hypervisor for other guests. */
  stealMs: number;
  clientMs: number;
  /**
   * k·G a second on this process's core just before the run (the nodes idle): the machine's
   * speed at that moment. Here it moves by half within an hour, and the rates with it.
   */
  machineMulG: number;
  /** Payments completed at this level before the measured ones (`leadInFor`). */
  leadIn: number;
  /** Payments measured: completed in the window. */
  measured: number;
}

/** `count` calls of `one`, `inFlight` of them at a time. */
async function inFlightAtOnce(inFlight: number, count: number, one: () => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < count) {
        next++;
        await one();
        if (GAP_MS > 0 && inFlight === 1) await new Promise((r) => setTimeout(r, GAP_MS));
      }
    }),
  );
}

/**
 * Payments a run with more than one in flight completes at its own level before its window opens
 * (`BENCH_LEAD_IN`, default 16 × the level; none one at a time). The path's warm-up runs at 16 in
 * flight, and the paths a round of 64 takes are compiled by V8 only once it meets them: six runs
 * of 3,000 at 64 back to back on one devnet gave 632, 722, 695, 831, 777 and 812/s, the first
 * paying for the compiler. A node serving 64 payments at once has been doing so for a while.
 */
function leadInFor(inFlight: number): number {
  if (inFlight === 1) return 0;
  const v = process.env.BENCH_LEAD_IN;
  return v === undefined ? 16 * inFlight : Number(v);
}

/** What a node and the machine have spent up to a moment of a run (`run`'s window ends). */
interface Mark {
  at: number;
  counters: Promise<Record<string, Cost>>;
  machine: Promise<{ busy: number; steal: number }>;
  client: NodeJS.CpuUsage;
}

function mark(metrics: Record<string, string>): Mark {
  return {
    at: performance.now(),
    counters: Promise.all(
      Object.entries(metrics).map(async ([n, url]) => [n, await costCounters(url)] as const),
    ).then(Object.fromEntries),
    machine: machineCpuMs(),
    client: process.cpuUsage(),
  };
}

/** `n` payments with `inFlight` at once: completed per second, latencies, failures, cost per node. */
async function run(
  alice: Pick<RpcClient, 'call'>,
  feed: Outcomes,
  target: string,
  inFlight: number,
  metrics: Record<string, string>,
  rpcUrls: Record<string, string>,
  /** The path's name (`one_channel`, `two_hops`), for the files of `BENCH_LATENCIES`. */
  label: string,
): Promise<RunResult> {
  // Before the profiles start, so that none of them records this busy loop's wait.
  const machineMulG = opsPerSecond(mulGOnce, 200);
  const profiles =
    PROFILE_SECS > 0 && (inFlight > 1 || PROFILE_ONE)
      ? Object.entries(rpcUrls).map(([n, url]) =>
          createRpcClient(url)
            .call('pprof', { duration_secs: `0x${PROFILE_SECS.toString(16)}` })
            .then((r: { path: string }) => `${n} ${r.path}`),
        )
      : [];
  // The window: the payments that end after the lead-in and up to `PAYMENTS` more. With more
  // than one in flight, payments go on starting until the window's last one ends, so every
  // payment in it ran with the level full; the ramp before and the drain after are not measured.
  const leadIn = leadInFor(inFlight);
  const windowEnd = leadIn + PAYMENTS;
  const starts = inFlight === 1 ? PAYMENTS : windowEnd + inFlight - 1;
  const lat: number[] = [];
  /** When each payment ended, ms from the window's start (for `BENCH_LATENCIES`). */
  const ends: number[] = [];
  const failed: string[] = [];
  let ended = 0;
  let open: Mark | undefined = leadIn === 0 ? mark(metrics) : undefined;
  let close: Mark | undefined;
  /** A payment ended: marks the window's ends; whether this one is in the window. */
  const ending = (): boolean => {
    const i = ++ended;
    if (i === leadIn) open = mark(metrics);
    if (i === windowEnd) close = mark(metrics);
    return i > leadIn && i <= windowEnd;
  };
  await inFlightAtOnce(inFlight, starts, () =>
    pay(alice, feed, target).then(
      (ms) => {
        if (!ending()) return;
        lat.push(ms);
        ends.push(performance.now() - (open as Mark).at);
      },
      (e: Error) => {
        ending();
        failed.push(e.message);
      },
    ),
  );
  const [from, to] = [open as Mark, close as Mark];
  const rate = (lat.length * 1000) / (to.at - from.at);
  if (LATENCIES_DIR) {
    const file = path.join(LATENCIES_DIR, `${label}-${inFlight}.json`);
    await writeFile(file, JSON.stringify(ends.map((t, i) => [+t.toFixed(2), +lat[i]!.toFixed(2)])));
    console.log(`    latencies: ${file}`);
  }
  const done = Math.max(1, lat.length);
  const [machine0, machine1] = await Promise.all([from.machine, to.machine]);
  const machineMs = (machine1.busy - machine0.busy) / done;
  const stealMs = (machine1.steal - machine0.steal) / done;
  const clientMs = (to.client.user - from.client.user + to.client.system - from.client.system) / 1000 / done;
  const [before, after] = await Promise.all([from.counters, to.counters]);
  const cost: Record<string, Cost> = {};
  for (const n of Object.keys(metrics)) {
    const a = after[n] as Cost;
    const b = before[n] as Cost;
    const per = (x: number, y: number) => (x - y) / done;
    cost[n] = {
      cpuMs: per(a.cpuMs, b.cpuMs),
      eventLoopMs: per(a.eventLoopMs, b.eventLoopMs),
      majorGcs: per(a.majorGcs, b.majorGcs),
      gcPauseMs: per(a.gcPauseMs, b.gcPauseMs),
      syncs: per(a.syncs, b.syncs),
      flushMs: per(a.flushMs, b.flushMs),
      diskKb: per(a.diskKb, b.diskKb),
      commitments: per(a.commitments, b.commitments),
      updates: per(a.updates, b.updates),
    };
  }
  if (failed.length) console.log(`    ${failed.length} failed: ${[...new Set(failed)].join('; ')}`);
  for (const p of await Promise.all(profiles)) console.log(`    profile: ${p}`);
  return {
    inFlight,
    rate,
    p50: pct(lat, 50),
    p99: pct(lat, 99),
    failed: failed.length,
    cost,
    machineMs,
    stealMs,
    clientMs,
    machineMulG,
    leadIn,
    measured: lat.length,
  };
}

/** What a node's store syncs are: its WAL's fdatasyncs, or on Postgres its turns' COMMITs (the server flushes). */
const SYNC_LABEL = process.env.BENCH_STORE === 'postgres' ? 'commit' : 'fsync';

/** TLC updates (AddTlc, RemoveTlc) a node sent per CommitmentSigned it sent: its batching. */
const updatesEach = (c: Cost) => (c.commitments > 0 ? c.updates / c.commitments : 0);

function describe(r: RunResult): string {
  const costs = Object.entries(r.cost)
    .map(
      ([n, c]) =>
        `${n} ${c.cpuMs.toFixed(1)} ms cpu (event loop ${c.eventLoopMs.toFixed(2)}, gc pauses ${c.gcPauseMs.toFixed(2)}, ${(c.majorGcs * 1000).toFixed(1)} full gc a 1,000), ${c.syncs.toFixed(2)} ${SYNC_LABEL}${c.flushMs > 0 ? ` (${(c.flushMs / Math.max(c.syncs, 1e-9)).toFixed(2)} ms each)` : ''}, ${c.diskKb.toFixed(0)} KB, ` +
        `${c.commitments.toFixed(2)} CommitmentSigned (${updatesEach(c).toFixed(1)} updates each)`,
    )
    .join(' | ');
  return (
    `${String(r.inFlight).padStart(2)} in flight: ${r.rate.toFixed(1)}/s, p50 ${r.p50.toFixed(1)} ms, ` +
    `p99 ${r.p99.toFixed(1)} ms${r.leadIn ? ` (${PAYMENTS} after ${r.leadIn} at this level)` : ''} ` +
    `(machine ${(r.machineMulG / 1000).toFixed(1)}k k·G/s before)\n` +
    `      per payment: ${costs}\n` +
    `      per payment, whole machine: ${r.machineMs.toFixed(2)} ms cpu (this client ${r.clientMs.toFixed(2)}, stolen by other guests ${r.stealMs.toFixed(2)})`
  );
}

/** Operations per second of `fn` over about `ms`. */
function opsPerSecond(fn: () => void, ms = 500): number {
  let n = 0;
  const t0 = performance.now();
  while (performance.now() - t0 < ms) {
    for (let i = 0; i < 50; i++) fn();
    n += 50;
  }
  return (n * 1000) / (performance.now() - t0);
}

const SPEED_SCALAR = new Uint8Array(32).fill(7);
/** One k·G on the backend the nodes use: the unit of the machine's speed. */
const mulGOnce = () => void curve().mulG(SPEED_SCALAR);

/** What the curve backend the nodes use does per second on this machine. */
function curveCeiling() {
  const c = curve();
  const mulG = opsPerSecond(mulGOnce);
  const { schnorr } = nobleSchnorr;
  const sk = new Uint8Array(32).fill(3);
  const msg = new Uint8Array(32).fill(9);
  const sig = schnorr.sign(msg, sk, new Uint8Array(32));
  const pub = schnorr.getPublicKey(sk);
  const verify = opsPerSecond(() => schnorrVerify(sig, msg, pub));
  return { backend: c.name, mulG, schnorrVerify: verify };
}

const load = os
  .loadavg()
  .map((l) => l.toFixed(2))
  .join(' ');
console.log(
  `load average ${load} on ${os.cpus().length} cores; ` +
    `${PAYMENTS} keysends per run, after ${WARMUP} per path to warm up; send_payment over ${RPC_TRANSPORT}`,
);
const pgServer = process.env.BENCH_STORE === 'postgres' ? await startPostgres() : undefined;
const urls = new Map<string, string>();
if (pgServer) for (const n of ['alice', 'bob', 'carol']) urls.set(n, await freshDatabase(pgServer));
console.log(`store: ${pgServer ? 'postgres' : 'sqlite'}`);
const net = await startDevnet({
  dir: path.join(tempDir('strand-bench-pay-'), 'net'),
  nodes: 3,
  blockIntervalMs: 200,
  // Below the kernel's ephemeral range (32768 on): a port there may be taken at any moment by an
  // outgoing connection's local end, and a node that cannot listen ends the run (EADDRINUSE).
  basePort: devnetBasePort(),
  topology: LINE_TOPOLOGY,
  reset: true,
  store: pgServer ? (node) => ({ url: urls.get(node) }) : undefined,
  pipelined: PIPELINED,
  log: () => {},
});
const nodes = net.description.nodes;
const feed = await outcomes(nodes[0]!.rpc_url);
const alice: Pick<RpcClient, 'call'> = RPC_TRANSPORT === 'ws' ? feed : createRpcClient(nodes[0]!.rpc_url);
const summary: Record<string, unknown> = {
  store: pgServer ? 'postgres' : 'sqlite',
  rpc: RPC_TRANSPORT,
  pipelined: PIPELINED,
  payments: PAYMENTS,
  warmup: WARMUP,
};
try {
  for (const [key, label, target, involved] of [
    ['one_channel', 'one channel (alice → bob)', nodes[1]!.pubkey, 2],
    ['two_hops', 'two hops (alice → bob → carol)', nodes[2]!.pubkey, 3],
  ] as const) {
    const metrics = Object.fromEntries(nodes.slice(0, involved).map((n) => [n.name, n.metrics_url]));
    const rpcUrls = Object.fromEntries(nodes.slice(0, involved).map((n) => [n.name, n.rpc_url]));
    for (let i = 0; i < 10; i++) await pay(alice, feed, target); // the route, one at a time
    await inFlightAtOnce(16, WARMUP - 10, () =>
      pay(alice, feed, target).then(
        () => undefined,
        () => undefined,
      ),
    );
    console.log(`${label}:`);
    const runs: RunResult[] = [];
    for (const n of SKIP_ONE ? CONCURRENCY : [1, ...CONCURRENCY]) {
      const r = await run(alice, feed, target, n, metrics, rpcUrls, key);
      console.log(`  ${describe(r)}`);
      runs.push(r);
    }
    summary[key] = runs.map((r) => ({
      in_flight: r.inFlight,
      per_s: +r.rate.toFixed(1),
      payments: r.measured,
      p50_ms: +r.p50.toFixed(1),
      p99_ms: +r.p99.toFixed(1),
      failed: r.failed,
      machine_cpu_ms: +r.machineMs.toFixed(2),
      machine_steal_ms: +r.stealMs.toFixed(2),
      client_cpu_ms: +r.clientMs.toFixed(2),
      machine_mul_g_per_s: Math.round(r.machineMulG),
      lead_in: r.leadIn,
      per_payment: Object.fromEntries(
        Object.entries(r.cost).map(([n, c]) => [
          n,
          {
            cpu_ms: +c.cpuMs.toFixed(2),
            event_loop_cpu_ms: +c.eventLoopMs.toFixed(2),
            gc_pause_ms: +c.gcPauseMs.toFixed(3),
            full_gc_per_1000: +(c.majorGcs * 1000).toFixed(1),
            fsync: +c.syncs.toFixed(3),
            fsync_ms: +c.flushMs.toFixed(3),
            disk_kb: +c.diskKb.toFixed(1),
            commitment_signed: +c.commitments.toFixed(3),
            updates_per_commitment_signed: +updatesEach(c).toFixed(1),
          },
        ]),
      ),
    }));
  }
  const ceiling = curveCeiling();
  const best = Math.max(...((summary.one_channel as { per_s: number }[]) ?? []).map((r) => r.per_s));
  console.log(
    `curve ceiling (${ceiling.backend}): ${ceiling.mulG.toFixed(0)} k·G/s, ` +
      `${ceiling.schnorrVerify.toFixed(0)} Schnorr verify/s; best one-channel rate is ` +
      `${((best / ceiling.schnorrVerify) * 100).toFixed(2)}% of the verify rate`,
  );
  summary.curve = {
    backend: ceiling.backend,
    mul_g_per_s: Math.round(ceiling.mulG),
    schnorr_verify_per_s: Math.round(ceiling.schnorrVerify),
  };
  console.log(JSON.stringify(summary));
} finally {
  feed.close();
  await net.stop();
  await pgServer?.stop();
}
