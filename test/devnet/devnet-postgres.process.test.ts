/**
 * `strand devnet --store-url postgres://…`: the devnet an operator rehearses on Postgres. Every
 * node keeps its store in its own schema of one real Postgres database (no SQLite file), a payment
 * goes through, and a restart without the flag finds the same stores (recorded in devnet.json);
 * another database on a restart is refused, and `--reset` empties the schemas for a new network.
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRpcClient } from '../../src/rpc/client.ts';
import { runStrand, tempDir } from '../helpers/node-process.ts';
import { devnetBasePort } from '../helpers/ports.ts';
import { freshDatabase, type PostgresServer, pgQuery, startPostgres } from '../helpers/postgres.ts';
import { interrupt, startDevnetCli } from './devnet-cli.ts';

const dir = path.join(tempDir('strand-devnet-pg-'), 'net');
const basePort = devnetBasePort();
let server: PostgresServer;
let url: string;
let proc: ChildProcess | undefined;

function startDevnet(extra: string[]) {
  return startDevnetCli(dir, basePort, extra);
}

const readDescription = () => JSON.parse(fs.readFileSync(path.join(dir, 'devnet.json'), 'utf8'));

beforeAll(async () => {
  server = await startPostgres();
  url = await freshDatabase(server);
}, 120_000);
afterAll(async () => {
  if (proc) await interrupt(proc);
  await server?.stop();
});

describe('strand devnet --store-url', { timeout: 240_000 }, () => {
  it('runs every node on a schema of the database, keeps it across a restart, and pays', async () => {
    const started = await startDevnet(['--nodes', '2', '--store-url', url]);
    proc = started.proc;
    expect(started.out()).toMatch(
      /\[devnet\] store: Postgres postgres:\/\/postgres@127\.0\.0\.1:\d+\/\S+, one schema per node \(devnet_alice, devnet_bob\), emptied for the new network/,
    );
    const desc = readDescription();
    expect(desc.store_url).toBe(url);
    expect(desc.nodes[0].store_url).toBe(`${url}?options=-c+search_path%3Ddevnet_alice`);
    for (const n of desc.nodes as { dir: string }[])
      expect(fs.existsSync(path.join(n.dir, 'fiber', 'store', 'strand.db'))).toBe(false);
    // The devnet's channel is in alice's schema, and only there.
    const channels = async (schema: string) =>
      (await pgQuery<{ n: number }>(url, `SELECT COUNT(*)::int AS n FROM ${schema}.channels`))[0]!.n;
    expect(await channels('devnet_alice')).toBe(1);
    expect(await channels('devnet_bob')).toBe(1);
    const leases = await pgQuery<{ node_key: string }>(
      url,
      'SELECT node_key FROM devnet_alice.strand_lease UNION ALL SELECT node_key FROM devnet_bob.strand_lease',
    );
    expect(leases.map((l) => l.node_key).sort()).toEqual(
      desc.nodes.map((n: { pubkey: string }) => n.pubkey).sort(),
    );

    const alice = createRpcClient(desc.nodes[0].rpc_url);
    const bob = createRpcClient(desc.nodes[1].rpc_url);
    const inv = await bob.call('new_invoice', { amount: '0x5f5e100', currency: 'Fibd', description: 'pg' });
    const hash = inv.invoice.data.payment_hash;
    let sent: { payment_hash: string } | undefined;
    for (let i = 0; i < 30 && !sent; i++) {
      sent = await alice.call('send_payment', { invoice: inv.invoice_address }).catch(() => undefined);
      if (!sent) await new Promise((r) => setTimeout(r, 1000));
    }
    expect(sent?.payment_hash).toBe(hash);
    for (let i = 0; i < 60; i++) {
      if ((await alice.call('get_payment', { payment_hash: hash })).status === 'Success') break;
      await new Promise((r) => setTimeout(r, 500));
    }
    expect((await alice.call('get_payment', { payment_hash: hash })).status).toBe('Success');
    expect(
      await pgQuery(url, 'SELECT status FROM devnet_bob.invoices WHERE invoice = $1', [inv.invoice_address]),
    ).toEqual([{ status: 'Paid' }]);
    expect(await interrupt(proc)).toBe(0);

    // Another database for the same network: refused, the stores are elsewhere.
    const other = await freshDatabase(server);
    const refused = await runStrand([
      'devnet',
      '-d',
      dir,
      '--base-port',
      String(basePort),
      '--store-url',
      other,
    ]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      /this devnet's nodes keep their stores in postgres:\/\/\S+; --reset to start afresh/,
    );
    const notPg = await runStrand(['devnet', '-d', dir, '--store-url', 'mysql://x']);
    expect([notPg.code, notPg.stderr]).toEqual([
      1,
      'strand: --store-url: expected postgres://user:password@host:port/database, got mysql://x\n',
    ]);

    // Restarted without the flag: the same database, the same channel and invoice.
    const again = await startDevnet(['--nodes', '2']);
    proc = again.proc;
    expect(again.out()).toMatch(/store: Postgres \S+ \(as before\), one schema per node/);
    expect(again.out()).toMatch(/channel: alice → bob exists/);
    const bob2 = createRpcClient(readDescription().nodes[1].rpc_url);
    expect((await bob2.call('get_invoice', { payment_hash: hash })).status).toBe('Paid');
    expect(await interrupt(proc)).toBe(0);

    // --reset: a new network, the schemas emptied (one node, no channel: quick).
    const reset = await startDevnet(['--nodes', '1', '--reset', '--store-url', url]);
    proc = reset.proc;
    expect(reset.out()).toMatch(/one schema per node \(devnet_alice\), emptied for the new network/);
    expect(await channels('devnet_alice')).toBe(0);
    const owner = await pgQuery(url, "SELECT value FROM devnet_alice.node_meta WHERE key = 'node_pubkey'");
    expect(owner).toEqual([{ value: readDescription().nodes[0].pubkey }]);
    expect(readDescription().nodes[0].pubkey).not.toBe(desc.nodes[0].pubkey);
  });
});
