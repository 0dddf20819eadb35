/**
 * A real `strand node` pointed at a real `strand devchain`: it reports the dev chain's genesis
 * hash as its chain hash and its wallet lock as the default funding lock; the wallet's balance as
 * the test collections read it (indexer `get_cells_capacity` on that lock) is the funded amount.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChainClient } from '../../src/chain/client.ts';
import { type NodeProcess, STRAND_BIN, startNode, tempDir } from '../helpers/node-process.ts';

const CKB = 100_000_000n;
const FIXTURE = path.resolve(import.meta.dirname, '../fixtures/fiber-test-nodes/1');

let chainDir: string;
let devchain: ChildProcess;
let rpcUrl: string;
let node: NodeProcess | undefined;

beforeAll(async () => {
  chainDir = tempDir('strand-devchain-node-');
  devchain = spawn(
    process.execPath,
    [
      STRAND_BIN,
      'devchain',
      '-d',
      chainDir,
      '--listen',
      '127.0.0.1:0',
      '--block-interval',
      '200',
      '--fund',
      `${FIXTURE}/ckb/key:3000`,
    ],
    // The node's encrypted wallet key file, read with the node's password variable.
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, FIBER_SECRET_KEY_PASSWORD: 'password1' } },
  );
  rpcUrl = await new Promise<string>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`devchain did not start: ${out}`)), 50_000);
    devchain.stdout?.on('data', (d) => {
      out += d;
      const m = /devchain rpc (\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1] as string);
      }
    });
  });
  const dir = tempDir();
  fs.mkdirSync(path.join(dir, 'ckb'), { recursive: true });
  fs.mkdirSync(path.join(dir, 'fiber'), { recursive: true });
  fs.copyFileSync(path.join(FIXTURE, 'ckb/key'), path.join(dir, 'ckb/key'));
  fs.copyFileSync(path.join(FIXTURE, 'fiber/sk'), path.join(dir, 'fiber/sk'));
  node = await startNode({
    dir,
    config: { services: ['fiber', 'rpc', 'ckb'], ckb: { rpc_url: rpcUrl } },
    env: { FIBER_SECRET_KEY_PASSWORD: 'password1' },
  });
}, 90_000);

afterAll(async () => {
  await node?.stop();
  if (devchain.exitCode === null) {
    const exited = new Promise((r) => devchain.once('exit', r));
    devchain.kill('SIGTERM');
    await exited;
  }
  fs.rmSync(chainDir, { recursive: true, force: true });
});

describe('a node on the dev chain', () => {
  it('reports the dev chain genesis as chain_hash and its wallet lock as default funding lock', async () => {
    const info = await node?.call('node_info', []);
    expect(info?.error).toBeUndefined();
    expect(info?.result.chain_hash).toBe(
      '0x677c33a40ddd906cdb6ca996d80081a0a6da2ff40050525da640d5c24d557614',
    );
    const lock = info?.result.default_funding_lock_script;
    expect(lock).toMatchObject({
      code_hash: '0x9bd7e06f3ecf4be0f2fcd2188b23f1b9fcc88e5d4b65a8637b17723bbda3cce8',
      hash_type: 'type',
    });
    // The test collections' balance check: the indexer's capacity under that lock.
    const client = createChainClient({ rpcUrl });
    expect(await client.getCellsCapacity({ script: lock, script_type: 'lock' })).toBe(3000n * CKB);
  });
});
