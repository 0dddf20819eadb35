/**
 * Through real processes: `strand devchain` runs as its own process; the node-side chain client
 * and wallet talk to it over HTTP, send CKB to another address and see both balances change.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChainClient } from '../../src/chain/client.ts';
import { waitForConfirmations } from '../../src/chain/tracker.ts';
import { createWallet } from '../../src/chain/wallet.ts';
import { hexToBytes } from '../../src/codec/hex.ts';

const CKB = 100_000_000n;
const ROOT = new URL('../../', import.meta.url).pathname;
const KEY_FILE = path.join(ROOT, 'test/fixtures/fiber-test-nodes/1/ckb/plain_key');

let dir: string;
let proc: ChildProcess;
let rpcUrl: string;
let chainHash: string;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'strand-devchain-proc-'));
  proc = spawn(
    process.execPath,
    [
      'bin/strand.js',
      'devchain',
      '-d',
      dir,
      '--listen',
      '127.0.0.1:0',
      '--block-interval',
      '100',
      '--fund',
      `${KEY_FILE}:2000:50`,
    ],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  let err = '';
  proc.stderr?.on('data', (d) => {
    err += d;
  });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`devchain did not start: ${out} ${err}`)), 50_000);
    proc.stdout?.on('data', (d) => {
      out += d;
      const url = /devchain rpc (\S+)/.exec(out);
      const hash = /chain hash (\S+)/.exec(out);
      if (url && hash) {
        clearTimeout(timer);
        rpcUrl = url[1] as string;
        chainHash = hash[1] as string;
        resolve();
      }
    });
    proc.once('exit', (code) => reject(new Error(`devchain exited with ${code}: ${err}`)));
  });
}, 60_000);

afterAll(async () => {
  if (proc.exitCode === null) {
    const exited = new Promise((r) => proc.once('exit', r));
    proc.kill('SIGTERM');
    await exited;
  }
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('strand devchain as a process', () => {
  it('serves the dev spec genesis and funds the configured wallet; the wallet sends CKB', async () => {
    expect(chainHash).toBe('0x677c33a40ddd906cdb6ca996d80081a0a6da2ff40050525da640d5c24d557614');
    const client = createChainClient({ rpcUrl });
    expect(await client.chainHash()).toBe(chainHash);
    const key = hexToBytes(`0x${fs.readFileSync(KEY_FILE, 'utf8').trim()}`);
    const wallet = createWallet({ client, secretKey: key });
    expect(wallet.address).toBe(
      fs.readFileSync(path.join(ROOT, 'test/fixtures/fiber-test-nodes/1/ckb/wallet'), 'utf8').trim(),
    );
    expect(await wallet.balance()).toBe(2000n * CKB + 142n * CKB);
    const other = createWallet({ client, secretKey: new Uint8Array(32).fill(0x4e) });
    const hash = await wallet.transfer(other.lockScript, 250n * CKB);
    await waitForConfirmations(client, hash, { confirmations: 1, pollMs: 50, timeoutMs: 20_000 });
    expect(await other.balance()).toBe(250n * CKB);
    const after = await wallet.balance();
    expect(after).toBeLessThan(1892n * CKB);
    expect(after).toBeGreaterThan(1892n * CKB - 1000n);
  });

  it('funds an address through the faucet subcommand', async () => {
    const out = await new Promise<string>((resolve, reject) => {
      const p = spawn(
        process.execPath,
        ['bin/strand.js', 'devchain', 'faucet', `0x${'5a'.repeat(20)}`, '123.5', '--rpc', rpcUrl],
        { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let s = '';
      p.stdout.on('data', (d) => {
        s += d;
      });
      p.once('exit', (code) => (code === 0 ? resolve(s.trim()) : reject(new Error(`faucet exited ${code}`))));
    });
    expect(out).toMatch(/^0x[0-9a-f]{64}$/);
    const client = createChainClient({ rpcUrl });
    await waitForConfirmations(client, out, { confirmations: 1, pollMs: 50, timeoutMs: 20_000 });
    const cap = await client.getCellsCapacity({
      script: {
        code_hash: '0x9bd7e06f3ecf4be0f2fcd2188b23f1b9fcc88e5d4b65a8637b17723bbda3cce8',
        hash_type: 'type',
        args: `0x${'5a'.repeat(20)}`,
      },
      script_type: 'lock',
    });
    expect(cap).toBe(12_350_000_000n);
  });
});
