/**
 * A chaos run: a devnet of nodes in a line under a storm of payments (invoices and keysend, in
 * both directions, one and two hops, many in flight) while random nodes are killed with SIGKILL
 * and started again. When the kills are done the storm stops, the network is left to settle, and
 * `audit` checks that every payment ended, invoices and payments agree on both ends, and no
 * shannon was lost or created in any channel or node.
 *
 * Every payment carries a custom record naming its payee and amount, so that the payers' own
 * stores tell the whole story, including payments whose `send_payment` answer was lost in a kill.
 */
import path from 'node:path';
import { type RunningDevnet, startDevnet } from '../../src/devnet/devnet.ts';
import { createRpcClient, type RpcClient } from '../../src/rpc/client.ts';
import { tempDir } from '../helpers/node-process.ts';
import { devnetBasePort } from '../helpers/ports.ts';
import { prng } from '../helpers/prng.ts';
import { audit, type ChannelView, type PayerRecord, type Snapshot, sameSnapshot } from './audit.ts';

export interface ChaosOptions {
  kills: number;
  /** Payments in flight at once. */
  inFlight: number;
  seed: number;
  /** Pause between kills, ms (a random value in this range). */
  gapMs: [number, number];
  /** How long the network may take to settle after the storm, ms. */
  settleMs: number;
  dir?: string;
  /** Each node's `store:` config section (Postgres runs); unset: SQLite files. */
  store?: (node: string) => Record<string, unknown>;
  /** The nodes offer pipelined TLC updates (`fiber.pipelined_updates`): the channels run them. */
  pipelined?: boolean;
  log: (line: string) => void;
}

export interface ChaosReport {
  seed: number;
  kills: number;
  payments: number;
  succeeded: number;
  failed: number;
  violations: string[];
  dir: string;
  seconds: number;
}

const TAG_KEY = '0x1';
const hex = (n: bigint) => `0x${n.toString(16)}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const tag = (payee: string, amount: bigint) => `0x${Buffer.from(`${payee}:${amount}`).toString('hex')}`;
function untag(v: string | undefined): { payee: string; amount: bigint } | undefined {
  const [payee, amount] = Buffer.from(v?.slice(2) ?? '', 'hex')
    .toString()
    .split(':');
  return payee && amount ? { payee, amount: BigInt(amount) } : undefined;
}

export async function runChaos(o: ChaosOptions): Promise<ChaosReport> {
  const t0 = Date.now();
  const rand = prng(o.seed);
  const pick = <T>(xs: T[]) => xs[Math.floor(rand() * xs.length)]!;
  const dir = o.dir ?? path.join(tempDir('strand-chaos-'), 'net');
  const line = ['alice', 'bob', 'carol'];
  const net: RunningDevnet = await startDevnet({
    dir,
    nodes: line.length,
    blockIntervalMs: 300,
    // Below the kernel's ephemeral ports (32768+), where other processes' connections land.
    basePort: devnetBasePort(),
    topology: {
      peers: [
        ['alice', 'bob'],
        ['bob', 'carol'],
      ],
      channels: [
        { from: 'alice', to: 'bob', funding: 2000, udt: false, public: true },
        { from: 'bob', to: 'carol', funding: 2000, udt: false, public: true },
      ],
    },
    reset: true,
    store: o.store,
    pipelined: o.pipelined,
    log: () => {},
  });
  let crash = '';
  void net.crashed.then((what) => {
    crash = what;
  });
  const rpc = new Map<string, RpcClient>(
    net.description.nodes.map((n) => [n.name, createRpcClient(n.rpc_url, undefined, 20_000)]),
  );
  const pubkey = new Map(net.description.nodes.map((n) => [n.name, n.pubkey]));
  const invoices = new Map<string, Set<string>>(line.map((n) => [n, new Set()]));
  try {
    // Both channels usable both ways, and the two-hop routes known, before the storm.
    await waitForRoutes(rpc, pubkey, line);
    const before = await snapshot(rpc, line, invoices);
    o.log(`chaos: seed ${o.seed}, ${o.kills} kills, ${o.inFlight} in flight, data in ${dir}`);

    let storming = true;
    let sent = 0;
    const worker = async () => {
      while (storming) {
        const payer = pick(line);
        const payee = pick(line.filter((n) => n !== payer));
        const amount = BigInt(1000 + Math.floor(rand() * 100_000));
        const records = { [TAG_KEY]: tag(payee, amount) };
        try {
          if (rand() < 0.6) {
            const inv = await rpc.get(payee)!.call('new_invoice', { amount: hex(amount), currency: 'Fibd' });
            invoices.get(payee)!.add(inv.invoice.data.payment_hash);
            await rpc
              .get(payer)!
              .call('send_payment', { invoice: inv.invoice_address, custom_records: records });
          } else {
            await rpc.get(payer)!.call('send_payment', {
              target_pubkey: pubkey.get(payee),
              amount: hex(amount),
              keysend: true,
              custom_records: records,
            });
          }
          sent++;
        } catch {
          // A node down or busy, no route while a peer reconnects: the storm goes on; whatever
          // the payer took on is in its store and audited at the end.
          await sleep(100);
        }
      }
    };
    const workers = Array.from({ length: o.inFlight }, worker);

    for (let k = 1; k <= o.kills; k++) {
      await sleep(o.gapMs[0] + rand() * (o.gapMs[1] - o.gapMs[0]));
      const victim = pick(line);
      await net.restartNode(victim, 'SIGKILL');
      o.log(`kill ${k}/${o.kills}: ${victim} (${sent} payments sent so far)`);
      if (crash) throw new Error(crash);
    }
    storming = false;
    await Promise.all(workers);

    o.log('storm over; waiting for the network to settle');
    const after = await settle(rpc, line, invoices, o.settleMs);
    const violations = audit({ line, before, after });
    if (crash) violations.push(crash);
    const succeeded = after.payments.filter((p) => p.status === 'Success').length;
    return {
      seed: o.seed,
      kills: o.kills,
      payments: after.payments.length,
      succeeded,
      failed: after.payments.filter((p) => p.status === 'Failed').length,
      violations,
      dir,
      seconds: Math.round((Date.now() - t0) / 1000),
    };
  } finally {
    await net.stop();
  }
}

async function waitForRoutes(rpc: Map<string, RpcClient>, pubkey: Map<string, string>, line: string[]) {
  const [a, , c] = line;
  for (const [from, to] of [
    [a, c],
    [c, a],
  ] as [string, string][]) {
    const end = Date.now() + 120_000;
    for (;;) {
      const ok = await rpc
        .get(from)!
        .call('send_payment', {
          target_pubkey: pubkey.get(to),
          amount: '0x3e8',
          keysend: true,
          dry_run: true,
        })
        .then(
          () => true,
          () => false,
        );
      if (ok) break;
      if (Date.now() > end) throw new Error(`no route ${from} → ${to} after 120 s`);
      await sleep(500);
    }
  }
}

/**
 * Waits until the network is quiet (every payment ended, no TLC pending) and stays so across two
 * snapshots taken a second apart (`sameSnapshot`), then returns the last.
 */
async function settle(
  rpc: Map<string, RpcClient>,
  line: string[],
  invoices: Map<string, Set<string>>,
  ms: number,
): Promise<Snapshot> {
  const end = Date.now() + ms;
  let quiet: Snapshot | undefined;
  for (;;) {
    const s = await snapshot(rpc, line, invoices).catch(() => undefined);
    if (s && Date.now() > end) return s;
    if (s && isQuiet(s)) {
      if (quiet && sameSnapshot(quiet, s)) return s;
      quiet = s;
    } else quiet = undefined;
    if (Date.now() > end + 30_000) throw new Error('nodes do not answer after the storm');
    await sleep(1000);
  }
}

function isQuiet(s: Snapshot): boolean {
  const channels = [...s.channels.values()].flatMap((m) => [...m.values()]);
  const invoices = [...s.invoices.values()].flatMap((m) => [...m.values()]);
  return (
    s.payments.every((p) => p.status === 'Success' || p.status === 'Failed') &&
    channels.every((c) => c.offered === 0n && c.received === 0n) &&
    invoices.every((st) => st !== 'Received')
  );
}

async function snapshot(
  rpc: Map<string, RpcClient>,
  line: string[],
  invoices: Map<string, Set<string>>,
): Promise<Snapshot> {
  const s: Snapshot = { channels: new Map(), payments: [], invoices: new Map() };
  for (const n of line) {
    const client = rpc.get(n)!;
    const { channels } = await client.call<{ channels: ChannelJson[] }>('list_channels', {});
    s.channels.set(n, new Map(channels.map((c) => [c.channel_id, channelView(c)])));
    s.payments.push(...(await payments(client, n)));
    const statuses = new Map<string, string>();
    for (const hash of invoices.get(n)!) {
      const inv = await client.call('get_invoice', { payment_hash: hash });
      statuses.set(hash, inv.status);
    }
    s.invoices.set(n, statuses);
  }
  return s;
}

interface ChannelJson {
  channel_id: string;
  state: { state_name: string };
  local_balance: string;
  remote_balance: string;
  offered_tlc_balance: string;
  received_tlc_balance: string;
}

const channelView = (c: ChannelJson): ChannelView => ({
  channelId: c.channel_id,
  state: c.state.state_name,
  local: BigInt(c.local_balance),
  remote: BigInt(c.remote_balance),
  offered: BigInt(c.offered_tlc_balance),
  received: BigInt(c.received_tlc_balance),
});

async function payments(client: RpcClient, payer: string): Promise<PayerRecord[]> {
  const out: PayerRecord[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await client.call('list_payments', { limit: '0x3e8', ...(after ? { after } : {}) });
    for (const p of page.payments as {
      payment_hash: string;
      status: string;
      fee: string;
      custom_records: Record<string, string> | null;
    }[]) {
      const t = untag(p.custom_records?.[TAG_KEY]);
      // The run's own probes (dry runs leave no session) and anything untagged are not the storm's.
      if (!t) continue;
      out.push({
        payer,
        hash: p.payment_hash,
        status: p.status,
        fee: BigInt(p.fee),
        payee: t.payee,
        amount: t.amount,
      });
    }
    if (!page.last_cursor || page.payments.length === 0) return out;
    after = page.last_cursor;
  }
}
