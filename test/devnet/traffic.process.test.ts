/**
 * `strand devnet traffic` against a real devnet (dev chain + three node processes in a line): it
 * prints a live line and a summary, and the summary's counts are what the nodes themselves report
 * (payments listed as Success, and as Failed, at the payers), its fees what they paid.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TrafficSummary } from '../../src/devnet/traffic-stats.ts';
import { createRpcClient } from '../../src/rpc/client.ts';
import { type DevnetProcess, startDevnetProcess } from '../helpers/devnet-process.ts';
import { runStrand } from '../helpers/node-process.ts';

const TOPOLOGY = `nodes: 3
peers: [[alice, bob], [bob, carol]]
channels:
  - { from: alice, to: bob, funding: 500 }
  - { from: bob, to: carol, funding: 500 }
`;

interface Payment {
  payment_hash: string;
  status: string;
  fee: string;
}

async function allPayments(rpcUrl: string): Promise<Payment[]> {
  const { payments } = await createRpcClient(rpcUrl).call('list_payments', { limit: '0x2710' });
  return payments;
}

describe('strand devnet traffic', { timeout: 300_000 }, () => {
  let net: DevnetProcess;
  beforeAll(async () => {
    net = await startDevnetProcess(TOPOLOGY);
  }, 240_000);
  afterAll(async () => {
    await net?.stop();
  });

  it('reports counts and fees equal to what the payers list', async () => {
    // Once both channels are in alice's graph every pair has a route.
    const alice = createRpcClient(net.description.nodes[0]!.rpc_url);
    for (let i = 0; ; i++) {
      const { channels } = await alice.call('graph_channels', {});
      if (channels.length === 2) break;
      if (i > 120) throw new Error('the graph never showed both channels');
      await new Promise((r) => setTimeout(r, 500));
    }
    const run = await runStrand([
      'devnet',
      'traffic',
      '-d',
      net.dir,
      '--tps',
      '2',
      '--duration',
      '4',
      '--pattern',
      'random',
      '--json',
    ]);
    expect(run.code, run.stderr).toBe(0);
    const lines = run.stdout.trim().split('\n');
    expect(
      lines.some((l) => /^\[traffic\] +\d+ s {2}sent \d+ {2}ok \d+ .* p50 .* p99 .* fees /.test(l)),
    ).toBe(true);
    expect(run.stdout).toContain('success rate');
    const summary = JSON.parse(lines.at(-1)!) as TrafficSummary;
    expect(summary.sent).toBeGreaterThanOrEqual(6);
    expect(summary.unfinished).toBe(0);
    expect(summary.succeeded + summary.failed + summary.rejected).toBe(summary.sent);
    expect(summary.succeeded).toBeGreaterThan(0);

    const payments = (await Promise.all(net.description.nodes.map((n) => allPayments(n.rpc_url)))).flat();
    const withStatus = (s: string) => payments.filter((p) => p.status === s);
    expect(withStatus('Success').length).toBe(summary.succeeded);
    expect(withStatus('Failed').length).toBe(summary.failed);
    expect(payments.length).toBe(summary.succeeded + summary.failed);
    const fees = withStatus('Success').reduce((sum, p) => sum + BigInt(p.fee), 0n);
    expect(fees.toString()).toBe(summary.fees);

    // The hub pattern: bob, the only node with two channels, is at one end of every payment, so
    // whatever alice or carol paid was an invoice of bob's.
    const before = new Set(payments.map((p) => p.payment_hash));
    const hub = await runStrand([
      'devnet',
      'traffic',
      '-d',
      net.dir,
      '--tps',
      '2',
      '--duration',
      '2',
      '--pattern',
      'hub',
      '--json',
    ]);
    expect(hub.code, hub.stderr).toBe(0);
    const hubSummary = JSON.parse(hub.stdout.trim().split('\n').at(-1)!) as TrafficSummary;
    const bob = createRpcClient(net.description.nodes[1]!.rpc_url);
    let made = 0;
    for (const n of net.description.nodes) {
      const fresh = (await allPayments(n.rpc_url)).filter((p) => !before.has(p.payment_hash));
      made += fresh.length;
      if (n.name === 'bob') continue;
      for (const p of fresh) {
        const invoice = await bob.call('get_invoice', { payment_hash: p.payment_hash });
        expect(invoice.invoice.data.payment_hash).toBe(p.payment_hash);
      }
    }
    expect(made).toBe(hubSummary.succeeded + hubSummary.failed);
  });
});

describe('strand devnet traffic arguments', () => {
  it.each([
    [['--tps', '0'], '--tps must be a number above 0'],
    [['--duration', 'x'], '--duration must be between 0 and 86400 seconds'],
    [['--pattern', 'ring'], '--pattern must be random or hub'],
    [['--amount', '0.123456789'], '--amount must be a positive amount of CKB with at most 8 decimals'],
    [['--max-in-flight', '0'], '--max-in-flight must be a whole number'],
  ])('refuses %j', async (args, message) => {
    const run = await runStrand(['devnet', 'traffic', '-d', '/nonexistent', ...args]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(message);
  });
});
