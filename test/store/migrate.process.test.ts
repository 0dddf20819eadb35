/**
 * `strand store migrate --from sqlite:… --to postgres://…` with real processes: a node with a
 * channel, a paid and an open invoice on its SQLite file is stopped, its store copied into a real
 * Postgres database, and started again on Postgres (the SQLite file moved away): it lists the same
 * channel with the same balances, answers the same invoices, and takes a new payment. A second
 * copy into the now non-empty database is refused. Then `backup_now` on the node on Postgres: a
 * node directory whose SQLite store restores the node (channel marked until the peer confirms it
 * current, then paying again).
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { deserializeChannel } from '../../src/channel/state.ts';
import {
  CKB,
  type DevchainProcess,
  readyPair,
  rpc,
  startDevchain,
  until,
} from '../channel/process-helpers.ts';
import { type NodeProcess, runStrand, startNode, tempDir } from '../helpers/node-process.ts';
import { freshDatabase, type PostgresServer, startPostgres } from '../helpers/postgres.ts';

const MODULES = ['info', 'peer', 'channel', 'graph', 'payment', 'invoice', 'admin'];
const hex = (v: bigint) => `0x${v.toString(16)}`;

let server: PostgresServer;
let chain: DevchainProcess;
let a: NodeProcess;
let b: NodeProcess;
/** a's configuration before it moved to Postgres. */
let sqliteConfig: Record<string, unknown>;

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
    sqliteConfig = config;
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

  it('backup_now on the node on Postgres: a node directory that restores it on SQLite', async () => {
    const live = await balances(a);
    const dest = path.join(tempDir('strand-pg-backup-'), 'b1');
    const started = Date.now();
    const r = await rpc(a, 'backup_now', { path: dest });
    console.log(`backup_now on Postgres: ${Date.now() - started} ms, ${Number(BigInt(r.size))} bytes`);
    expect(r.path).toBe(dest);
    const manifest = JSON.parse(fs.readFileSync(path.join(dest, 'backup.json'), 'utf8'));
    expect(manifest.source).toBe('postgres');
    expect(manifest.channels).toHaveLength(1);
    expect(manifest.channels[0].local_balance).toBe(String(BigInt(live[0].local)));
    // The copy's channel is marked (the live store never is): it waits for the peer's word.
    const copy = new Database(path.join(dest, 'fiber/store/strand.db'), { readonly: true });
    try {
      const rows = copy.prepare('SELECT data FROM channels').all() as { data: string }[];
      expect(rows.map((x) => deserializeChannel(x.data).flags)).toEqual([['RESTORED_FROM_BACKUP']]);
    } finally {
      copy.close();
    }
    expect((await rpc(a, 'list_channels', {})).channels[0].state.state_flags).toEqual([]);
    expect(await a.stop()).toBe(0);

    // README's restore: the backup's three files into an empty base directory, no store.url.
    const home = tempDir('strand-restored-');
    for (const f of ['fiber/sk', 'fiber/store/strand.db', 'ckb/key']) {
      fs.mkdirSync(path.dirname(path.join(home, f)), { recursive: true });
      fs.copyFileSync(path.join(dest, f), path.join(home, f));
    }
    a = await startNode({ dir: home, config: sqliteConfig, env: { FIBER_SECRET_KEY_PASSWORD: 'password1' } });
    await until(
      'the restored channel confirmed current by the peer',
      async () => (await rpc(a, 'list_channels', {})).channels[0],
      (c) => c?.state.state_name === 'CHANNEL_READY' && c.state.state_flags.length === 0,
    );
    expect(await balances(a)).toEqual(live);
    const after = await pay(b, a, 1n * CKB);
    expect((await rpc(a, 'get_invoice', { payment_hash: after })).status).toBe('Paid');
  }, 240_000);
});
