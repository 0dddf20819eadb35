/**
 * `strand devnet` as a user runs it: the network comes up, is described in devnet.json, answers
 * over JSON-RPC (also through `strand rpc`), whitelists and funds both test tokens, funds through the
 * faucet, stops cleanly on SIGINT and keeps its state across a restart.
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { scriptToAddress } from '../../src/chain/address.ts';
import { formatCkb } from '../../src/cli/devnet-fund.ts';
import { createRpcClient } from '../../src/rpc/client.ts';
import { eventually, runStrand, tempDir } from '../helpers/node-process.ts';
import { devnetBasePort } from '../helpers/ports.ts';
import { interrupt, startDevnetCli } from './devnet-cli.ts';

const dir = path.join(tempDir('strand-devnet-'), 'net');
const basePort = devnetBasePort();
let proc: ChildProcess | undefined;

function startDevnet() {
  return startDevnetCli(dir, basePort, ['--nodes', '2']);
}

afterAll(async () => {
  if (proc && proc.exitCode === null) await interrupt(proc);
});

// Bringing up a chain and nodes takes a while on a loaded machine.
describe('strand devnet', { timeout: 180_000 }, () => {
  it('brings up a chain and connected nodes, described in devnet.json', async () => {
    const started = await startDevnet();
    proc = started.proc;
    expect(started.out()).toMatch(/alice\s+http:\/\/127\.0\.0\.1:\d+/);
    const desc = JSON.parse(fs.readFileSync(path.join(dir, 'devnet.json'), 'utf8'));
    expect(desc.nodes.map((n: { name: string }) => n.name)).toEqual(['alice', 'bob']);
    // Metrics are on in a devnet, at the port after each node's P2P port.
    expect(desc.nodes[0].metrics_url).toBe(`http://127.0.0.1:${basePort + 115}/metrics`);
    const scraped = await fetch(desc.nodes[0].metrics_url);
    expect(await scraped.text()).toContain('strand_peers_connected 1');
    const alice = createRpcClient(desc.nodes[0].rpc_url);
    const bob = createRpcClient(desc.nodes[1].rpc_url);
    const info = await alice.call('node_info');
    expect(info.pubkey).toBe(desc.nodes[0].pubkey);
    expect(info.chain_hash).toBe(desc.chain.chain_hash);
    expect(info.default_funding_lock_script.args).toBe(desc.nodes[0].wallet_lock_args);
    const peers = (await bob.call('list_peers')).peers as { pubkey: string }[];
    expect(peers.map((p) => p.pubkey)).toContain(desc.nodes[0].pubkey);

    // The faucet and the rpc command.
    const chain = createRpcClient(desc.chain.rpc_url);
    const lock = {
      code_hash: info.default_funding_lock_script.code_hash,
      hash_type: 'type',
      args: desc.nodes[0].wallet_lock_args,
    };
    const before = BigInt(
      (await chain.call('get_cells_capacity', [{ script: lock, script_type: 'lock' }])).capacity,
    );
    expect(before).toBeGreaterThan(0n);
    // Both test tokens: whitelisted on every node, and in every wallet.
    const scripts = await chain.call('get_dev_scripts');
    const tokens = [scripts.test_udt.script, scripts.test_xudt.script];
    expect(info.udt_cfg_infos.map((u: { name: string; script: unknown }) => [u.name, u.script])).toEqual([
      ['test-udt', tokens[0]],
      ['test-xudt', tokens[1]],
    ]);
    for (const type of tokens) {
      const key = { script: lock, script_type: 'lock', filter: { script: type } };
      const cells = await chain.call('get_cells', [key, 'asc', '0x10']);
      expect(cells.objects).toHaveLength(1);
    }
    // The faucet waits for its transaction and says where the CKB went and the new balance.
    const fund = await runStrand(['devnet', 'fund', 'alice', '1000', '-d', dir]);
    expect(fund.stderr).toBe('');
    const address = scriptToAddress({ codeHash: lock.code_hash, hashType: 'type', args: lock.args });
    const printed = new RegExp(
      `^sent 1000 CKB to ${address} \\(alice\\)\ntx 0x[0-9a-f]{64}\nbalance (\\d+(?:\\.\\d+)?) CKB\n$`,
    ).exec(fund.stdout);
    expect(printed, fund.stdout).not.toBeNull();
    const after = BigInt(
      (await chain.call('get_cells_capacity', [{ script: lock, script_type: 'lock' }])).capacity,
    );
    expect(after - before).toBe(1000n * 100_000_000n);
    expect(printed![1]).toBe(formatCkb(after));
    const again = await runStrand(['devnet', 'fund', 'nobody', '1', '-d', dir]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/invalid CKB address 'nobody'/);
    const rpc = await runStrand(['rpc', '--node', 'bob', '-d', dir, 'node_info']);
    expect(JSON.parse(rpc.stdout).pubkey).toBe(desc.nodes[1].pubkey);
    const bad = await runStrand(['rpc', '--node', 'bob', '-d', dir, 'no_such_method']);
    expect(bad.code).toBe(1);
    expect(JSON.parse(bad.stderr).code).toBe(-32601);

    expect(await interrupt(proc)).toBe(0);
  });

  it('keeps its state across a restart', async () => {
    const desc = JSON.parse(fs.readFileSync(path.join(dir, 'devnet.json'), 'utf8'));
    const started = await startDevnet();
    proc = started.proc;
    expect(started.out()).not.toContain('wallets funded');
    const again = JSON.parse(fs.readFileSync(path.join(dir, 'devnet.json'), 'utf8'));
    expect(again.nodes.map((n: { pubkey: string }) => n.pubkey)).toEqual(
      desc.nodes.map((n: { pubkey: string }) => n.pubkey),
    );
    expect(again.chain.chain_hash).toBe(desc.chain.chain_hash);
    expect(await interrupt(proc)).toBe(0);
  });

  it('takes its chain and nodes with it when it is killed', async () => {
    const started = await startDevnet();
    proc = started.proc;
    const children = childrenOf(proc.pid!);
    // The dev chain and both nodes.
    expect(children.length).toBe(3);
    const killed = proc;
    proc = undefined;
    await new Promise((r) => {
      killed.once('exit', r);
      killed.kill('SIGKILL');
    });
    // Nothing tells them but the closing of their channel to the devnet: no signal reaches them.
    await eventually(async () => children.every((pid) => !alive(pid)), 'the children to stop');
    expect(children.filter(alive)).toEqual([]);
  });
});

/** The pids of the processes whose parent is `pid` (from /proc). */
function childrenOf(pid: number): number[] {
  return fs
    .readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      try {
        // stat: "pid (comm) state ppid …"; comm may hold spaces, so read after its ')'.
        const stat = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid;
      } catch {
        return false;
      }
    })
    .map(Number);
}

/** Whether `pid` still runs (a zombie, its exit not yet collected, has ended). */
function alive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}
