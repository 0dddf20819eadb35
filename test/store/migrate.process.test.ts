/**
 * `strand store migrate --from sqlite:… --to postgres://…` with real processes: a node with a
 * channel, a paid and an open invoice on its SQLite file is stopped, its store copied into a real
 * Postgres database, and started again on Postgres (the SQLite file moved away): it lists the same
 * channel with the same balances, answers the same invoices, and takes a new payment. A second
 * copy into the now non-empty database is refused.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import {
  CKB,
  type DevchainProcess,
  readyPair,
  rpc,
  startDevchain,
  until,
} from '../channel/process-helpers.ts';
import { type NodeProcess, runStrand, startNode } from '../helpers/node-process.ts';
import { freshDatabase, type PostgresServer, startPostgres } from '../helpers/postgres.ts';

const MODULES = ['info', 'peer', 'channel', 'graph', 'payment', 'invoice'];
const hex = (v: bigint) => `0x${v.toString(16)}`;

let server: PostgresServer;
let chain: DevchainProcess;
let a: NodeProcess;
let b: NodeProcess;

beforeAll(async () => {
  server = await startPostgres();
  chain = await startDevchain([1, 2]);
  ({ a, b } = await readyPair(chain.url, MODULES));
}, 240_000);

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  await chain?.stop();
  await server?.stop();
});

async function pay(from: NodeProcess, to: NodeProcess, amount: bigint): Promise<string> {
  const inv = await rpc(to, 'new_invoice', { amount: hex(amount), currency: 'Fibd' });
  const sent = await rpc(from, 'send_payment', { invoice: inv.invoice_address });
  await until(
    'payment success',
    () => rpc(from, 'get_payment', { payment_hash: sent.payment_hash }),
    (p) => p.status === 'Success',
  );
  return inv.invoice.data.payment_hash;
}

const balances = async (n: NodeProcess) =>
  (await rpc(n, 'list_channels', {})).channels.map(
    (c: {
      channel_id: string;
      state: { state_name: string };
      local_balance: string;
      remote_balance: string;
    }) => ({
      id: c.channel_id,
      state: c.state.state_name,
      local: c.local_balance,
      remote: c.remote_balance,
    }),
  );

describe('strand store migrate', () => {
  it('moves a node from SQLite to Postgres with its channel and invoices', async () => {
    const paid = await pay(b, a, 3n * CKB);
    const open = (await rpc(a, 'new_invoice', { amount: hex(CKB), currency: 'Fibd' })).invoice.data
      .payment_hash;
    const before = await balances(a);
    expect(before).toHaveLength(1);
    const config = YAML.parse(fs.readFileSync(path.join(a.dir, 'config.yml'), 'utf8'));
    expect(await a.stop()).toBe(0);

    const url = await freshDatabase(server);
    const file = path.join(a.dir, 'fiber', 'store', 'strand.db');
    const copy = await runStrand(['store', 'migrate', '--from', `sqlite:${file}`, '--to', url]);
    expect(copy.stderr).toBe('');
    expect(copy.code).toBe(0);
    expect(copy.stdout).toMatch(/^channels: 1 rows$/m);
    expect(copy.stdout).toMatch(/^invoices: 2 rows$/m);
    const again = await runStrand(['store', 'migrate', '--from', `sqlite:${file}`, '--to', url]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/target database is not empty/);
    const typo = await runStrand(['store', 'migrate', '--from', `sqlite:${file}x`, '--to', url]);
    expect([typo.code, typo.stderr]).toEqual([1, `strand: no SQLite store at ${file}x\n`]);

    // The file goes away: whatever the node answers now comes from Postgres.
    for (const f of fs.readdirSync(path.dirname(file)))
      fs.renameSync(path.join(path.dirname(file), f), path.join(path.dirname(file), `${f}.moved`));
    a = await startNode({
      dir: a.dir,
      config: { ...config, store: { url } },
      env: { FIBER_SECRET_KEY_PASSWORD: 'password1' },
    });
    expect(fs.existsSync(file)).toBe(false);
    expect(await balances(a)).toEqual(before);
    expect((await rpc(a, 'get_invoice', { payment_hash: paid })).status).toBe('Paid');
    expect((await rpc(a, 'get_invoice', { payment_hash: open })).status).toBe('Open');

    // And it keeps working on Postgres: a new payment into the node goes through.
    await until(
      'the channel ready again',
      async () => (await rpc(a, 'list_channels', {})).channels[0],
      (c) => c?.state.state_name === 'CHANNEL_READY',
    );
    await until(
      'the peers reconnected',
      async () => (await rpc(b, 'list_peers', {})).peers,
      (p) => p.length === 1,
    );
    const later = await pay(b, a, 2n * CKB);
    expect((await rpc(a, 'get_invoice', { payment_hash: later })).status).toBe('Paid');
    expect(BigInt((await balances(a))[0].local)).toBe(BigInt(before[0].local) + 2n * CKB);
  }, 240_000);
});
