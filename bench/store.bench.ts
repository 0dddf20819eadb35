/**
 * `npm run bench:store`: a node with many channels and settled payments restarts to serving RPC,
 * and what each settled payment costs on disk — on the payer, the forwarder and the payee.
 *
 * 1. A devnet (alice → bob → carol, bob forwarding) makes a few real payments, keysend and
 *    invoice: the real channel states and rows the stores hold, and which tables grow per payment
 *    (printed: "rows per settled payment").
 * 2. Each node's store is filled (`store-fill.ts`) through the stores' own modules:
 *    `STORE_BENCH_CHANNELS` channels (default 10,000) cloned from its real channel, then
 *    `STORE_BENCH_PAYMENTS` settled payments (default 1,000,000) cloned from its real ones. The
 *    store file (with its -wal, checkpointed) is measured before and after each part.
 * 3. Each node is started again as a `strand node` process on the dev chain; timed from spawn to
 *    the first `node_info` answer, then `list_channels`, `list_payments` and `get_payment`
 *    (`get_invoice` on the payee) are timed.
 *
 * Prints a table, then one JSON summary line. `STORE_BENCH_DIR`: work (and stay) there.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import YAML from 'yaml';
import type { Channel } from '../src/channel/index.ts';
import { ChannelStore } from '../src/channel/index.ts';
import { DEVNET_PASSWORD, startDevnet } from '../src/devnet/devnet.ts';
import { type Child, STRAND_BIN, spawnStrand, stopChild } from '../src/devnet/supervisor.ts';
import { NODE_SCHEMAS } from '../src/node/store-schemas.ts';
import { PaymentStore } from '../src/payment/index.ts';
import { createRpcClient, type RpcClient } from '../src/rpc/client.ts';
import { openDatabase, type SqliteDb } from '../src/store/index.ts';
import { tempDir } from '../test/helpers/node-process.ts';
import { LINE_TOPOLOGY } from './line-topology.ts';
import { fillChannels, fillForwarder, fillPayee, fillPayer, rowCounts, sessionOf } from './store-fill.ts';

const CHANNELS = Number(process.env.STORE_BENCH_CHANNELS ?? 10_000);
const PAYMENTS = Number(process.env.STORE_BENCH_PAYMENTS ?? 1_000_000);
/** Real payments of each kind (keysend, invoice) the devnet makes first. */
const SEED = Number(process.env.STORE_BENCH_SEED ?? 3);
const AMOUNT = 10_000n;

const dir = process.env.STORE_BENCH_DIR ?? tempDir('strand-bench-store-');
const netDir = path.join(dir, 'net');
// Below Linux's ephemeral range (32768–60999): a port the nodes listen on again at each restart
// is not taken meanwhile by an outgoing connection.
const basePort = 20_000 + Math.floor(Math.random() * 10_000);
const roles = [
  { name: 'alice', side: 'payer' },
  { name: 'bob', side: 'forwarder' },
  { name: 'carol', side: 'payee' },
] as const;
type Side = (typeof roles)[number]['side'];

const storeFile = (node: string) => path.join(netDir, node, 'fiber', 'store', 'strand.db');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ms = (t0: number) => performance.now() - t0;

/** The store's bytes on disk: the file and its WAL, after a checkpoint. */
function storeBytes(db: SqliteDb, file: string): number {
  db.pragma('wal_checkpoint(TRUNCATE)');
  const size = (f: string) => (fs.existsSync(f) ? fs.statSync(f).size : 0);
  return size(file) + size(`${file}-wal`);
}

function readonlyCounts(node: string): Map<string, number> {
  const db = openDatabase(storeFile(node), [], { readonly: true });
  try {
    return rowCounts(db);
  } finally {
    db.close();
  }
}

// ---- 1. real payments on a devnet -------------------------------------------------------------

async function seed(): Promise<{ growth: Map<string, string[]>; payeeInvoice: string }> {
  console.log(
    `seeding: a devnet in ${netDir}, ${SEED} keysend and ${SEED} invoice payments alice → bob → carol`,
  );
  const net = await startDevnet({
    dir: netDir,
    nodes: 3,
    blockIntervalMs: 200,
    basePort,
    topology: LINE_TOPOLOGY,
    reset: true,
    log: () => {},
  });
  try {
    const [alice, , carol] = net.description.nodes.map((n) => createRpcClient(n.rpc_url));
    const before = roles.map((r) => readonlyCounts(r.name));
    const pay = async (params: object) => {
      for (;;) {
        try {
          const { payment_hash } = await alice!.call('send_payment', params);
          for (;;) {
            const p = await alice!.call('get_payment', { payment_hash });
            if (p.status === 'Failed') throw new Error(`seed payment failed: ${p.failed_error}`);
            if (p.status === 'Success') return;
            await sleep(50);
          }
        } catch (e) {
          // Right after the channels are ready the route may not be known yet.
          if (!/Failed to build route/.test((e as Error).message)) throw e;
          await sleep(300);
        }
      }
    };
    const target = net.description.nodes[2]!.pubkey;
    let payeeInvoice = '';
    for (let i = 0; i < SEED; i++) {
      await pay({ target_pubkey: target, amount: `0x${AMOUNT.toString(16)}`, keysend: true });
      const inv = await carol!.call('new_invoice', {
        amount: `0x${AMOUNT.toString(16)}`,
        currency: 'Fibd',
        description: `bench payment ${i}`,
        expiry: '0xe10',
      });
      payeeInvoice = inv.invoice_address;
      await pay({ invoice: payeeInvoice });
    }
    await sleep(500);
    const growth = new Map<string, string[]>();
    for (const [i, r] of roles.entries()) {
      const after = readonlyCounts(r.name);
      const grew = [...after]
        .filter(([t, n]) => n > (before[i]!.get(t) ?? 0))
        .map(([t, n]) => `${t} +${((n - (before[i]!.get(t) ?? 0)) / (2 * SEED)).toFixed(2)}`);
      growth.set(r.side, grew);
    }
    return { growth, payeeInvoice };
  } finally {
    await net.stop();
  }
}

// ---- 2. the stores filled ---------------------------------------------------------------------

interface Filled {
  side: Side;
  emptyBytes: number;
  channelBytes: number;
  paymentBytes: number;
  /** Payments written by the fill (the seeded ones aside). */
  filled: number;
  fillSeconds: number;
  /** Hashes to look up afterwards. */
  sample: string[];
}

function fill(node: string, side: Side, payeeInvoice: string): Filled {
  const file = storeFile(node);
  const db = openDatabase(file, NODE_SCHEMAS);
  try {
    const t0 = performance.now();
    const template = new ChannelStore(db).list()[0] as Channel;
    const emptyBytes = storeBytes(db, file);
    const channels = fillChannels(db, template, CHANNELS - 1);
    const withChannels = storeBytes(db, file);
    let hashes: string[];
    let written: number;
    if (side === 'payer') {
      const store = new PaymentStore(db);
      // The seed's successful payments (a first try before the route was known may have failed).
      const seeded = store.list({ limit: 1_000 });
      const templates = seeded
        .filter((v) => v.status === 'Success')
        .map((v) => store.get(v.paymentHash) ?? sessionOf(store.settled(v.paymentHash)!));
      hashes = fillPayer(db, templates, PAYMENTS - seeded.length, channels);
      written = hashes.length;
    } else if (side === 'forwarder') {
      hashes = fillForwarder(db, PAYMENTS - 2 * SEED);
      written = hashes.length;
    } else {
      // Half keysend, half invoices (as seeded); invoices are looked up.
      const r = fillPayee(db, payeeInvoice, AMOUNT, PAYMENTS - 2 * SEED, 2);
      hashes = r.invoices;
      written = r.written;
    }
    const full = storeBytes(db, file);
    const sample = Array.from({ length: 20 }, () => hashes[Math.floor(Math.random() * hashes.length)]!);
    return {
      side,
      emptyBytes,
      channelBytes: withChannels - emptyBytes,
      paymentBytes: full - withChannels,
      filled: written,
      fillSeconds: ms(t0) / 1000,
      sample,
    };
  } finally {
    db.close();
  }
}

// ---- 3. restarts ------------------------------------------------------------------------------

interface Restart {
  readyMs: number;
  rssMb: number;
  listChannelsMs: number;
  channelsListed: number;
  listPaymentsMs: number;
  listPaymentsAfterMs: number;
  getMs: number;
  stopMs: number;
}

async function timed<T>(f: () => Promise<T>): Promise<[T, number]> {
  const t0 = performance.now();
  const v = await f();
  return [v, ms(t0)];
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

async function restart(node: string, side: Side, sample: string[]): Promise<Restart> {
  const nodeDir = path.join(netDir, node);
  const config = YAML.parse(fs.readFileSync(path.join(nodeDir, 'config.yml'), 'utf8'));
  const url = `http://${config.rpc.listening_addr}`;
  const rpc: RpcClient = createRpcClient(url, undefined, 120_000);
  const log = fs.openSync(path.join(nodeDir, 'restart.log'), 'a');
  const t0 = performance.now();
  const proc: ChildProcess = spawn(process.execPath, [STRAND_BIN, 'node', '-d', nodeDir], {
    env: { ...process.env, FIBER_SECRET_KEY_PASSWORD: DEVNET_PASSWORD },
    stdio: ['ignore', log, log],
  });
  let exited = false;
  proc.once('exit', () => {
    exited = true;
  });
  try {
    for (;;) {
      if (exited) throw new Error(`${node} exited before it answered; see ${nodeDir}/restart.log`);
      try {
        await createRpcClient(url, undefined, 1_000).call('node_info');
        break;
      } catch {
        await sleep(10);
      }
      if (ms(t0) > 600_000) throw new Error(`${node} did not answer node_info in 10 minutes`);
    }
    const readyMs = ms(t0);
    const rss = rssMb(proc.pid!);
    const [channels, listChannelsMs] = await timed(() => rpc.call('list_channels', {}));
    let listPaymentsMs = NaN;
    let listPaymentsAfterMs = NaN;
    let getMs = NaN;
    if (side === 'payer') {
      [, listPaymentsMs] = await timed(() => rpc.call('list_payments', {}));
      [, listPaymentsAfterMs] = await timed(() =>
        rpc.call('list_payments', { status: 'Success', after: sample[0], limit: '0x64' }),
      );
      const gets: number[] = [];
      for (const h of sample) gets.push((await timed(() => rpc.call('get_payment', { payment_hash: h })))[1]);
      getMs = median(gets);
    } else if (side === 'payee') {
      const gets: number[] = [];
      for (const h of sample) gets.push((await timed(() => rpc.call('get_invoice', { payment_hash: h })))[1]);
      getMs = median(gets);
    }
    const t1 = performance.now();
    await stopChild({ name: node, proc, logFile: '', stopping: true } as Child, 30_000);
    return {
      readyMs,
      rssMb: rss,
      listChannelsMs,
      channelsListed: channels.channels.length,
      listPaymentsMs,
      listPaymentsAfterMs,
      getMs,
      stopMs: ms(t1),
    };
  } finally {
    if (!exited) proc.kill('SIGKILL');
    fs.closeSync(log);
  }
}

// ---- the run ----------------------------------------------------------------------------------

console.log(
  `load average ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')} on ${os.cpus().length} cores; ${CHANNELS} channels and ${PAYMENTS} settled payments per node`,
);
const rows: (Filled & Restart & { emptyReadyMs: number })[] = [];
try {
  const { growth, payeeInvoice } = await seed();
  for (const [side, grew] of growth)
    console.log(`  rows per settled payment, ${side}: ${grew.join(', ') || 'none'}`);
  const chain = await spawnStrand({
    name: 'devchain',
    args: [
      'devchain',
      '-d',
      path.join(netDir, 'chain'),
      '--listen',
      `127.0.0.1:${basePort}`,
      '--block-interval',
      '200',
    ],
    logFile: path.join(netDir, 'chain.log'),
    ready: /devchain rpc (\S+)\n/,
  });
  try {
    for (const r of roles) {
      const empty = await restart(r.name, r.side, []);
      console.log(`${r.name} (${r.side}): filling…`);
      const filled = fill(r.name, r.side, payeeInvoice);
      console.log(`  filled in ${filled.fillSeconds.toFixed(0)} s; restarting…`);
      const res = await restart(r.name, r.side, filled.sample);
      rows.push({ ...filled, ...res, emptyReadyMs: empty.readyMs });
    }
  } finally {
    await stopChild(chain.child);
  }
} finally {
  if (!process.env.STORE_BENCH_DIR) fs.rmSync(dir, { recursive: true, force: true });
}

const f1 = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : '—');
const perPayment = (r: Filled) => r.paymentBytes / r.filled;
console.log('');
console.log(
  '| side | store MB | bytes / settled payment | bytes / channel | restart to node_info (empty node) | RSS MB | list_channels ms | list_payments ms (first page / after) | get ms | stop ms |',
);
console.log('|---|---|---|---|---|---|---|---|---|---|');
for (const r of rows) {
  console.log(
    `| ${r.side} | ${((r.emptyBytes + r.channelBytes + r.paymentBytes) / 1e6).toFixed(0)} | ${perPayment(r).toFixed(0)} | ${(r.channelBytes / CHANNELS).toFixed(0)} | ${(r.readyMs / 1000).toFixed(2)} s (${(r.emptyReadyMs / 1000).toFixed(2)} s) | ${r.rssMb.toFixed(0)} | ${f1(r.listChannelsMs)} (${r.channelsListed}) | ${f1(r.listPaymentsMs)} / ${f1(r.listPaymentsAfterMs)} | ${f1(r.getMs)} | ${r.stopMs.toFixed(0)} |`,
  );
}
const bySide = Object.fromEntries(rows.map((r) => [r.side, r]));
console.log(
  JSON.stringify({
    bench: 'store',
    channels: CHANNELS,
    payments: PAYMENTS,
    restart_s: Object.fromEntries(rows.map((r) => [r.side, +(r.readyMs / 1000).toFixed(2)])),
    restart_empty_s: Object.fromEntries(rows.map((r) => [r.side, +(r.emptyReadyMs / 1000).toFixed(2)])),
    bytes_per_payment: Object.fromEntries(rows.map((r) => [r.side, Math.round(perPayment(r))])),
    bytes_per_channel: Math.round((bySide.payer?.channelBytes ?? 0) / CHANNELS),
    list_channels_ms: +f1(bySide.payer?.listChannelsMs ?? NaN),
    list_payments_ms: +f1(bySide.payer?.listPaymentsMs ?? NaN),
    get_payment_ms: +f1(bySide.payer?.getMs ?? NaN),
    rss_mb: Object.fromEntries(rows.map((r) => [r.side, Math.round(r.rssMb)])),
  }),
);
