/** A `strand devchain` process and funded `strand node` processes on it, for channel tests. */
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { createChainClient } from '../../src/chain/client.ts';
import { createClient, type StrandClient } from '../../src/client/index.ts';
import { bytesToHex } from '../../src/codec/hex.ts';
import { ckbHash } from '../../src/crypto/hash.ts';
import { type NodeProcess, STRAND_BIN, startNode, tempDir } from '../helpers/node-process.ts';

export const CKB = 100_000_000n;
const FIXTURES = path.resolve(import.meta.dirname, '../fixtures/fiber-test-nodes');

export interface DevchainProcess {
  url: string;
  dir: string;
  proc: ChildProcess;
  stop(): Promise<void>;
}

/**
 * Starts a dev chain funding the fixture wallets `nodes` (1, 2, 3) with `ckb` each, and `udt` /
 * `xudt` units of the test UDT / test xUDT when given.
 */
export async function startDevchain(
  nodes: number[],
  ckb = 5000,
  blockIntervalMs = 200,
  epochLength?: number,
  udt?: number,
  xudt?: number,
): Promise<DevchainProcess> {
  const dir = tempDir('strand-devchain-ch-');
  const tokens = xudt ? `:${udt ?? ''}:${xudt}` : udt ? `:${udt}` : '';
  const fund = nodes.flatMap((n) => ['--fund', `${FIXTURES}/${n}/ckb/plain_key:${ckb}${tokens}`]);
  if (epochLength) fund.push('--epoch-length', String(epochLength));
  const proc: ChildProcess = spawn(
    process.execPath,
    [
      STRAND_BIN,
      'devchain',
      '-d',
      dir,
      '--listen',
      '127.0.0.1:0',
      '--block-interval',
      String(blockIntervalMs),
      ...fund,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`devchain did not start: ${out}`)), 60_000);
    proc.stdout?.on('data', (d) => {
      out += d;
      const m = /devchain rpc (\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1] as string);
      }
    });
    proc.stderr?.on('data', (d) => {
      out += d;
    });
  });
  return {
    url,
    dir,
    proc,
    async stop() {
      if (proc.exitCode === null) {
        const exited = new Promise((r) => proc.once('exit', r));
        proc.kill('SIGTERM');
        await exited;
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A node with fixture `n`'s keys, on the chain at `rpcUrl`; `dir` reuses a previous node's home. */
export async function startChannelNode(
  n: number,
  rpcUrl: string,
  fiber: Record<string, unknown> = {},
  dir?: string,
  ckb: Record<string, unknown> = {},
  modules = ['info', 'peer', 'channel', 'dev', 'graph'],
  env: Record<string, string> = {},
): Promise<NodeProcess> {
  const home = dir ?? tempDir();
  if (!dir) {
    fs.mkdirSync(path.join(home, 'ckb'), { recursive: true });
    fs.mkdirSync(path.join(home, 'fiber'), { recursive: true });
    fs.copyFileSync(path.join(FIXTURES, `${n}/ckb/plain_key`), path.join(home, 'ckb/key'));
    fs.copyFileSync(path.join(FIXTURES, `${n}/fiber/sk`), path.join(home, 'fiber/sk'));
  }
  return startNode({
    dir: home,
    config: {
      fiber: { chain: 'dev', listening_addr: '/ip4/127.0.0.1/tcp/0', ...fiber },
      rpc: { listening_addr: '127.0.0.1:0', enabled_modules: modules },
      services: ['fiber', 'rpc', 'ckb'],
      ckb: { rpc_url: rpcUrl, ...ckb },
    },
    env: { FIBER_SECRET_KEY_PASSWORD: 'password1', ...env },
  });
}

/**
 * Fixture nodes 1 and 2 on the chain at `rpcUrl` with RPC `modules`, connected, and a private
 * channel from 1 (500 CKB; 2 adds 250) ready on both. `aEnv` is node 1's extra environment.
 */
export async function readyPair(
  rpcUrl: string,
  modules: string[],
  aEnv: Record<string, string> = {},
): Promise<{ a: NodeProcess; b: NodeProcess; bInfo: any }> {
  const accept = { auto_accept_channel_ckb_funding_amount: Number(250n * CKB) };
  const [a, b] = await Promise.all([
    startChannelNode(1, rpcUrl, {}, undefined, {}, modules, aEnv),
    startChannelNode(2, rpcUrl, accept, undefined, {}, modules),
  ]);
  const { bInfo } = await connect(a, b);
  await rpc(a, 'open_channel', {
    pubkey: bInfo.pubkey,
    funding_amount: `0x${(500n * CKB).toString(16)}`,
    public: false,
  });
  for (const n of [a, b])
    await until(
      'channel ready',
      async () => (await rpc(n, 'list_channels', {})).channels[0],
      (c) => c?.state.state_name === 'CHANNEL_READY',
    );
  return { a, b, bInfo };
}

const clients = new WeakMap<NodeProcess, StrandClient>();

/**
 * One call through the typed client (`strand/client`, dogfood): a failure throws its `RpcError`
 * (`code`, `method`, `data`). Untyped on purpose: tests pass any params, malformed ones included.
 */
export async function rpc(node: NodeProcess, method: string, params: unknown = {}): Promise<any> {
  let client = clients.get(node);
  if (!client) {
    client = createClient(node.url);
    clients.set(node, client);
  }
  return client.request(method, [params]);
}

/** Polls until `pred` holds (or throws after `ms`). */
export async function until<T>(
  what: string,
  fn: () => Promise<T>,
  pred: (v: T) => boolean,
  ms = 120_000,
): Promise<T> {
  const end = Date.now() + ms;
  let last: T | undefined;
  while (Date.now() < end) {
    last = await fn();
    if (pred(last)) return last;
    await new Promise((r) => setTimeout(r, 300));
  }
  throw new Error(`timed out waiting for ${what}: ${JSON.stringify(last)}`);
}

export async function connect(a: NodeProcess, b: NodeProcess): Promise<{ aInfo: any; bInfo: any }> {
  const aInfo = await rpc(a, 'node_info', undefined);
  const bInfo = await rpc(b, 'node_info', undefined);
  await rpc(a, 'connect_peer', { address: bInfo.addresses[0] });
  await until(
    'peers connected',
    () => rpc(b, 'list_peers', undefined),
    (r) => r.peers.length > 0,
  );
  return { aInfo, bInfo };
}

/**
 * A test token of the dev chain (the test UDT, or the test xUDT), and a whitelist naming it (the
 * acceptor auto-accepts, adding no tokens).
 */
export async function testUdtWhitelist(chainUrl: string, token: 'test_udt' | 'test_xudt' = 'test_udt') {
  const scripts = await createChainClient({ rpcUrl: chainUrl }).call<any>('get_dev_scripts');
  const udt = scripts[token].script as { code_hash: string; hash_type: string; args: string };
  const whitelist = [
    { name: 'TEST', script: udt, cell_deps: scripts[token].cell_deps, auto_accept_amount: 1 },
  ];
  return { udt, whitelist };
}

/**
 * `payer` pays a hold invoice of `payee` (the payee knows only the hash of `preimage`), retrying
 * until a route is known; resolves once the payee holds the TLC (the invoice is Received).
 */
export async function payHoldInvoice(
  payer: NodeProcess,
  payee: NodeProcess,
  amount: bigint,
  preimage: Uint8Array,
): Promise<{ preimage: string; paymentHash: string }> {
  const paymentHash = bytesToHex(ckbHash(preimage));
  const inv = await rpc(payee, 'new_invoice', {
    amount: `0x${amount.toString(16)}`,
    currency: 'Fibd',
    payment_hash: paymentHash,
  });
  await until(
    'a route to the payee',
    () => payer.call('send_payment', [{ invoice: inv.invoice_address }]),
    (r) => !r.error,
  );
  await until(
    'the payee holding the TLC',
    () => rpc(payee, 'get_invoice', { payment_hash: paymentHash }),
    (i) => i.status === 'Received',
  );
  return { preimage: bytesToHex(preimage), paymentHash };
}
