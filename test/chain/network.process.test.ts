/**
 * `strand node --network testnet` with only a CKB RPC URL, against a testnet node's recorded
 * answers: it checks and announces testnet's genesis, resolves fnn's testnet channel scripts,
 * speaks Fibt, and reports in node_info when the chain goes away and when it is back.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, type NodeProcess, runStrand, startNode, tempDir } from '../helpers/node-process.ts';
import { FixtureChain, fixture } from './fixture-chain.ts';

const TESTNET = '0x10639e0895502b5688a6be8cf69460d76541bfa4821629d86d62ba0aae3f9606';

let chain: FixtureChain;
let node: NodeProcess | undefined;

beforeAll(async () => {
  chain = await FixtureChain.start(fixture('testnet.json'));
  node = await startNode({
    config: {
      services: ['fiber', 'rpc', 'ckb'],
      fiber: { listening_addr: '/ip4/127.0.0.1/tcp/0' },
      rpc: { listening_addr: '127.0.0.1:0' },
      ckb: { tx_tracing_polling_interval_ms: 100 },
    },
    args: ['--network', 'testnet', '--ckb-rpc-url', chain.url],
  });
});
afterAll(async () => {
  await node?.stop();
  await chain.down();
});

const info = async () => (await node!.call('node_info')).result;

describe('strand node --network testnet', () => {
  it("announces testnet's genesis and fnn's testnet UDT whitelist, and reports the chain ok", async () => {
    const i = await info();
    expect(i.chain_hash).toBe(TESTNET);
    expect(i.udt_cfg_infos.map((u: { name: string }) => u.name)).toEqual(['RUSD']);
    expect(i.ckb_rpc_status).toBe('ok');
    // Channels are on: the testnet scripts were resolved (both type-id cells looked up).
    const searched = chain.calls('get_cells').map((p) => (p[0] as { script: { args: string } }).script.args);
    expect(searched).toContain('0x3cb7c0304fe53f75bb5727e2484d0beae4bd99d979813c6fc97c3cca569f10f6');
    expect(searched).toContain('0xf7e458887495cf70dd30d1543cad47dc1dfe9d874177bf19291e4db478d5751b');
    // And RUSD's cell dep, by its type id.
    expect(searched).toContain('0x97d30b723c0b2c66e9cb8d4d0df4ab5d7222cbb00d4a9a2055ce2e5d7f0d8b0f');
    expect((await node!.call('list_channels', [{}])).result).toEqual({ channels: [] });
  });

  it('makes testnet invoices (Fibt) and refuses dev ones', async () => {
    const ok = await node!.call('new_invoice', [{ amount: '0x5f5e100', currency: 'Fibt' }]);
    expect(ok.result.invoice_address).toMatch(/^fibt/);
    const bad = await node!.call('new_invoice', [{ amount: '0x5f5e100', currency: 'Fibd' }]);
    expect(bad.error?.message).toMatch(/Currency must be Fibt/);
  });

  it('node_info says since when the chain is unreachable, and ok once it answers again', async () => {
    await chain.down();
    await eventually(
      async () => /^unreachable since \d{4}-\d\d-\d\dT/.test((await info()).ckb_rpc_status),
      'ckb_rpc_status unreachable',
    );
    const since = (await info()).ckb_rpc_status;
    // Still down: the same time, the first failure's.
    expect((await info()).ckb_rpc_status).toBe(since);
    await chain.up();
    await eventually(async () => (await info()).ckb_rpc_status === 'ok', 'ckb_rpc_status ok');
    // The log line is written as the status changes, but reaches the process's output a moment
    // after the RPC can already answer `ok` (a CI run read the output in between).
    await eventually(
      async () => node!.output().includes('CKB RPC reachable again'),
      'logged as reachable again',
    );
  });
});

describe('a node whose chain is not the network it names', () => {
  it('refuses to start, naming the network and the genesis it found', async () => {
    const devChain = await FixtureChain.start([
      {
        request: { method: 'get_block_hash', params: ['0x0'] },
        response: { result: `0x${'de'.repeat(32)}` },
      },
    ]);
    const r = await runStrand(
      ['node', '-d', tempDir(), '--network', 'testnet', '--ckb-rpc-url', devChain.url, '--services', 'ckb'],
      { FIBER_SECRET_KEY_PASSWORD: 'test-password' },
    );
    await devChain.down();
    expect(r.code).not.toBe(0);
    expect(r.stderr + r.stdout).toContain(
      `the network is testnet but the chain at ${devChain.url} has genesis 0x${'de'.repeat(32)}`,
    );
  });
});
