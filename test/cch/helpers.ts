/**
 * A swap network for the hub's tests: a dev chain issuing the test UDT (the wrapped BTC here, 1
 * unit = 1 sat), the hub's node (fixture 1) and a user's node (fixture 2), a token channel each
 * way, and the LND double as the hub's Lightning node. The hub runs inside its node
 * (`services: [..., cch]`) or as a separate `strand cch` process following it.
 */

import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { sha256 } from '@noble/hashes/sha2.js';
import YAML from 'yaml';
import { LndDouble } from '../../src/devnet/lnd-double.ts';
import {
  connect,
  type DevchainProcess,
  rpc,
  startDevchain,
  testUdtWhitelist,
  until,
} from '../channel/process-helpers.ts';
import { type NodeProcess, STRAND_BIN, startNode, tempDir } from '../helpers/node-process.ts';

const FIXTURES = path.resolve(import.meta.dirname, '../fixtures/fiber-test-nodes');
export const hex = (v: bigint | number) => `0x${v.toString(16)}`;
export type Script = { code_hash: string; hash_type: string; args: string };

export interface SwapNetwork {
  chain: DevchainProcess;
  double: LndDouble;
  hub: NodeProcess;
  user: NodeProcess;
  udt: Script;
  whitelist: unknown;
  stop(): Promise<void>;
}

/** The `cch:` section for the double, with fnn's defaults unless `extra` says otherwise. */
export function cchSection(double: LndDouble, udt: Script, extra: Record<string, unknown> = {}) {
  return {
    lnd_rpc_url: double.url,
    lnd_cert_path: double.certPath,
    lnd_macaroon_path: double.macaroonPath,
    wrapped_btc_type_script: udt,
    ...extra,
  };
}

function nodeHome(n: number): string {
  const home = tempDir('strand-cch-');
  fs.mkdirSync(path.join(home, 'ckb'), { recursive: true });
  fs.mkdirSync(path.join(home, 'fiber'), { recursive: true });
  fs.copyFileSync(path.join(FIXTURES, `${n}/ckb/plain_key`), path.join(home, 'ckb/key'));
  fs.copyFileSync(path.join(FIXTURES, `${n}/fiber/sk`), path.join(home, 'fiber/sk'));
  return home;
}

export function startFiberNode(
  n: number,
  chainUrl: string,
  whitelist: unknown,
  extra: { services?: string[]; cch?: unknown; dir?: string; modules?: string[] } = {},
): Promise<NodeProcess> {
  return startNode({
    dir: extra.dir ?? nodeHome(n),
    config: {
      fiber: { chain: 'dev', listening_addr: '/ip4/127.0.0.1/tcp/0' },
      rpc: {
        listening_addr: '127.0.0.1:0',
        enabled_modules: extra.modules ?? [
          'info',
          'peer',
          'channel',
          'graph',
          'payment',
          'invoice',
          'pubsub',
          'cch',
        ],
      },
      services: extra.services ?? ['fiber', 'rpc', 'ckb'],
      ckb: { rpc_url: chainUrl, udt_whitelist: whitelist },
      ...(extra.cch ? { cch: extra.cch } : {}),
    },
    env: { FIBER_SECRET_KEY_PASSWORD: 'password1' },
  });
}

/** Opens a token channel from `from` to `to` funded with `amount` units; waits until it is ready. */
async function openTokenChannel(
  from: NodeProcess,
  to: NodeProcess,
  toPubkey: string,
  udt: Script,
  amount: bigint,
) {
  const before = (await rpc(from, 'list_channels', {})).channels.length;
  await rpc(from, 'open_channel', {
    pubkey: toPubkey,
    funding_amount: hex(amount),
    funding_udt_type_script: udt,
    public: false,
  });
  for (const n of [from, to])
    await until(
      'token channel ready',
      () => rpc(n, 'list_channels', {}),
      (x) =>
        x.channels.length === before + 1 &&
        x.channels.every((c: any) => c.state.state_name === 'CHANNEL_READY'),
    );
}

/**
 * The network; `inProcessHub`: the hub's node runs the cch service itself. Otherwise the hub's
 * node runs none and the caller starts a separate hub (`startStandaloneHub`).
 */
export async function startSwapNetwork(opts: {
  inProcessHub: boolean;
  cch?: Record<string, unknown>;
}): Promise<SwapNetwork> {
  const chain = await startDevchain([1, 2], 5000, 200, undefined, 10_000_000);
  const { udt, whitelist } = await testUdtWhitelist(chain.url);
  const double = await LndDouble.start();
  const hub = await startFiberNode(1, chain.url, whitelist, {
    ...(opts.inProcessHub
      ? { services: ['fiber', 'rpc', 'ckb', 'cch'], cch: cchSection(double, udt, opts.cch) }
      : {}),
  });
  const user = await startFiberNode(2, chain.url, whitelist);
  const { aInfo: hubInfo, bInfo: userInfo } = await connect(hub, user);
  await openTokenChannel(user, hub, hubInfo.pubkey, udt, 1_000_000n);
  await openTokenChannel(hub, user, userInfo.pubkey, udt, 1_000_000n);
  const net: SwapNetwork = {
    chain,
    double,
    hub,
    user,
    udt,
    whitelist,
    async stop() {
      // `net.hub`: a test may have restarted the hub's node.
      await Promise.all([net.hub.stop(), net.user.stop()]);
      await double.stop();
      await chain.stop();
    },
  };
  return net;
}

export function newPreimage(): { preimage: string; paymentHash: string } {
  const p = randomBytes(32);
  return { preimage: `0x${p.toString('hex')}`, paymentHash: `0x${Buffer.from(sha256(p)).toString('hex')}` };
}

/** The UDT balances of `node` on its channels, summed: what it holds on its side. */
export async function tokenBalance(node: NodeProcess): Promise<bigint> {
  const { channels } = await until(
    'no TLC pending',
    () => rpc(node, 'list_channels', {}),
    (x) => x.channels.every((c: any) => c.pending_tlcs.length === 0),
  );
  return channels
    .filter((c: any) => c.funding_udt_type_script)
    .reduce((sum: bigint, c: any) => sum + BigInt(c.local_balance), 0n);
}

/** Calls `method` on the hub until a route is known (right after start, gossip may lag). */
export async function orderStatus(hub: NodeProcess, paymentHash: string, want: string | string[]) {
  const wanted = Array.isArray(want) ? want : [want];
  return until(
    `cch order ${wanted.join('/')}`,
    () => rpc(hub, 'get_cch_order', { payment_hash: paymentHash }),
    (o) => wanted.includes(o.status),
  );
}

/**
 * A separate hub: `strand cch -d <dir>` following `fiberRpcUrl` (its RPC on a free port). `dir`
 * again restarts the same hub on its store.
 */
export async function startStandaloneHub(
  net: SwapNetwork,
  dir = tempDir('strand-cch-hub-'),
  extra: Record<string, unknown> = {},
): Promise<HubProcess> {
  const config = {
    fiber: { chain: 'dev' },
    rpc: { listening_addr: '127.0.0.1:0' },
    cch: { ...cchSection(net.double, net.udt, extra), fiber_rpc_url: net.hub.url },
  };
  fs.writeFileSync(path.join(dir, 'config.yml'), YAML.stringify(config));
  const proc = spawn(process.execPath, [STRAND_BIN, 'cch', '-d', dir], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const url = await new Promise<string>((resolve, reject) => {
    proc.stdout!.on('data', (d) => {
      out += d;
      const m = /"url":"(http:\/\/[^"]+)"[^\n]*"msg":"rpc server listening"/.exec(out);
      if (m) resolve(m[1]!);
    });
    proc.stderr!.on('data', (d) => {
      out += d;
    });
    proc.on('exit', (code) => reject(new Error(`strand cch exited with ${code}:\n${out}`)));
  });
  const post = async (body: string) => {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    return { status: res.status, text: await res.text(), headers: res.headers };
  };
  return {
    dir,
    url,
    proc,
    output: () => out,
    post,
    async call(method, params = []) {
      const r = await post(JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }));
      return JSON.parse(r.text);
    },
    stop(signal: NodeJS.Signals = 'SIGTERM') {
      return new Promise((resolve) => {
        if (proc.exitCode !== null || proc.signalCode !== null) return resolve(proc.exitCode);
        proc.once('exit', (code) => resolve(code));
        proc.kill(signal);
      });
    },
  } as HubProcess;
}

/** A separate hub: `stop` takes the signal (SIGKILL for a crash). */
export type HubProcess = Omit<NodeProcess, 'stop'> & {
  stop(signal?: NodeJS.Signals): Promise<number | null>;
};
