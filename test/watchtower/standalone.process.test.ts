/**
 * The honest node offline, a standalone watchtower on guard (real processes): B runs without its
 * built-in watchtower and feeds a separate watchtower node T over RPC
 * (`fiber.standalone_watchtower_rpc_url`), T being a `strand watchtower` process. After a TLC moves 100 CKB from A to B, B stops; A
 * publishes its first commitment; T — which holds only what B pushed — sweeps the whole
 * commitment cell to B's shutdown script, paying the fee from T's own wallet.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ccc } from '@ckb-ccc/core';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { createChainClient } from '../../src/chain/client.ts';
import { deserializeChannel } from '../../src/channel/state.ts';
import { ckbHash } from '../../src/crypto/hash.ts';
import { fromJsonText, type WatchedChannel } from '../../src/watchtower/types.ts';
import {
  CKB,
  connect,
  type DevchainProcess,
  rpc,
  startChannelNode,
  startDevchain,
  until,
} from '../channel/process-helpers.ts';
import { type NodeProcess, STRAND_BIN, tempDir } from '../helpers/node-process.ts';
import {
  addTlc,
  awaitSweep,
  hex,
  openReady,
  payByTlc,
  publishCommitment,
  storedCommitment,
} from './breach-helpers.ts';
import { openNewChannel } from './settle-helpers.ts';

const FIXTURES = path.resolve(import.meta.dirname, '../fixtures/fiber-test-nodes');

let chain: DevchainProcess;
let a: NodeProcess;
let b: NodeProcess;
let tower: NodeProcess;

function readDb<T>(node: NodeProcess, sql: string): T[] {
  const db = new Database(path.join(node.dir, 'fiber/store/strand.db'), { readonly: true });
  try {
    return db.prepare(sql).all() as T[];
  } finally {
    db.close();
  }
}

/** `strand watchtower`: chain + RPC only; fixture 3's wallet pays its fees. */
async function startTower(rpcUrl: string): Promise<NodeProcess> {
  const dir = tempDir('strand-tower-');
  fs.mkdirSync(path.join(dir, 'ckb'), { recursive: true });
  fs.copyFileSync(path.join(FIXTURES, '3/ckb/plain_key'), path.join(dir, 'ckb/key'));
  fs.writeFileSync(
    path.join(dir, 'config.yml'),
    YAML.stringify({
      fiber: { chain: 'dev', watchtower_check_interval_seconds: 1 },
      rpc: { listening_addr: '127.0.0.1:0', enabled_modules: ['info'] },
      ckb: { rpc_url: rpcUrl },
    }),
  );
  const proc = spawn(process.execPath, [STRAND_BIN, 'watchtower', '-d', dir], {
    env: { ...process.env, FIBER_SECRET_KEY_PASSWORD: 'password1' },
  });
  let out = '';
  const url = await new Promise<string>((resolve, reject) => {
    proc.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /"url":"(http:\/\/[^"]+)"[^\n]*"msg":"rpc server listening"/.exec(out);
      if (m) resolve(m[1]!);
    });
    proc.stderr.on('data', (d: Buffer) => {
      out += d.toString();
    });
    proc.on('exit', (code) => reject(new Error(`strand watchtower exited with ${code}:\n${out}`)));
  });
  const post = async (body: string, headers: Record<string, string> = {}) => {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
    });
    return { status: res.status, text: await res.text(), headers: res.headers };
  };
  return {
    dir,
    url,
    proc,
    output: () => out,
    post,
    async call(method, params = [], headers = {}) {
      return JSON.parse(
        (await post(JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }), headers)).text,
      );
    },
    stop: () =>
      new Promise((resolve) => {
        if (proc.exitCode !== null) return resolve(proc.exitCode);
        proc.once('exit', (code) => resolve(code));
        proc.kill('SIGTERM');
      }),
  };
}

beforeAll(async () => {
  chain = await startDevchain([1, 2, 3], 5000, 200, 10);
  tower = await startTower(chain.url);
  a = await startChannelNode(1, chain.url, { watchtower_check_interval_seconds: 1 });
  b = await startChannelNode(2, chain.url, {
    auto_accept_channel_ckb_funding_amount: Number(250n * CKB),
    watchtower_check_interval_seconds: 1,
    disable_built_in_watchtower: true,
    standalone_watchtower_rpc_url: tower.url,
  });
  await connect(a, b);
}, 120_000);

afterAll(async () => {
  if (process.env.DEBUG_WT) console.log(tower?.output().slice(-4000));
  await a?.stop();
  await b?.stop();
  await tower?.stop();
  await chain?.stop();
});

describe('standalone watchtower', () => {
  it('sweeps a revoked commitment while the honest node is offline', async () => {
    const bInfo = await rpc(b, 'node_info', undefined);
    const id = await openReady(a, b, {
      pubkey: bInfo.pubkey,
      funding_amount: hex(500n * CKB),
      public: false,
    });
    const old = storedCommitment(a);
    await payByTlc(a, b, id, 100n * CKB, '43');
    const bDone = await rpc(b, 'list_channels', {});
    expect([bDone.channels[0].local_balance, bDone.channels[0].remote_balance]).toEqual([
      hex(288n * CKB),
      hex(338n * CKB),
    ]);

    // T learns B's latest revocation through B's feed; then B goes offline.
    const bRevocation = () =>
      readDb<{ data: string }>(b, 'SELECT data FROM channels').map((r) => deserializeChannel(r.data))[0]
        ?.revocation?.version;
    const watched = await until(
      'revocation at the tower',
      async () =>
        readDb<{ node_id: string; data: string }>(tower, 'SELECT node_id, data FROM watch_channels').map(
          (r) => ({
            nodeId: r.node_id,
            c: fromJsonText<WatchedChannel>(r.data),
          }),
        ),
      (rows) => rows[0]?.c.revocationData?.commitmentNumber === bRevocation(),
    );
    expect(watched).toHaveLength(1);
    expect(watched[0]!.nodeId).toBe('');
    expect(watched[0]!.c.channelId).toBe(id);
    await b.stop();

    // A publishes its first commitment and leaves.
    await a.stop();
    const client = createChainClient({ rpcUrl: chain.url });
    const { hash, capacity } = await publishCommitment(client, old);
    expect(hash).toBe(old.hash);

    const bLock = bInfo.default_funding_lock_script;
    const { cell, rev } = await awaitSweep(client, bLock, capacity);
    expect(rev.transaction.inputs[0].previous_output).toEqual({ tx_hash: old.hash, index: '0x0' });
    // Two outputs: the whole commitment cell to B, T's change; the fee came from T's wallet.
    const towerInfo = await rpc(tower, 'node_info', undefined);
    expect(rev.transaction.outputs).toHaveLength(2);
    expect(rev.transaction.outputs[0].lock).toEqual(bLock);
    expect(rev.transaction.outputs[1].lock).toEqual(towerInfo.default_funding_lock_script);
    expect((await client.getLiveCell({ txHash: old.hash, index: 0 }, false)).status).not.toBe('live');
    const outcome = readDb<{ kind: string; tx_hash: string }>(
      tower,
      'SELECT kind, tx_hash FROM watch_outcomes',
    );
    await until(
      'outcome recorded',
      async () => readDb<{ kind: string }>(tower, 'SELECT kind FROM watch_outcomes'),
      (x) => x[0]?.kind === 'revoked',
    );
    expect(outcome[0]?.tx_hash).toBe(cell.out_point.tx_hash);
  }, 180_000);

  it("settles the offline node's share of the peer's force close to the node's own script", async () => {
    // Both come back; a new channel, a payment to B; B leaves again and A force-closes.
    a = await startChannelNode(1, chain.url, { watchtower_check_interval_seconds: 1 }, a.dir);
    b = await startChannelNode(
      2,
      chain.url,
      {
        auto_accept_channel_ckb_funding_amount: Number(250n * CKB),
        watchtower_check_interval_seconds: 1,
        disable_built_in_watchtower: true,
        standalone_watchtower_rpc_url: tower.url,
      },
      b.dir,
    );
    await connect(a, b);
    const bInfo = await rpc(b, 'node_info', undefined);
    const id = await openNewChannel(a, b, {
      pubkey: bInfo.pubkey,
      funding_amount: hex(500n * CKB),
      public: false,
    });
    const preimage = `0x${'46'.repeat(32)}`;
    await addTlc(a, {
      channel_id: id,
      amount: hex(100n * CKB),
      payment_hash: ccc.hexFrom(ckbHash(ccc.bytesFrom(preimage))),
      expiry: hex(BigInt(Date.now() + 3_600_000)),
    });
    await until(
      'TLC at B',
      () => rpc(b, 'list_channels', {}),
      (x) =>
        x.channels.find((c: any) => c.channel_id === id)?.pending_tlcs[0]?.status?.Inbound === 'Committed',
    );
    await rpc(b, 'remove_tlc', { channel_id: id, tlc_id: '0x0', reason: { payment_preimage: preimage } });
    await until(
      'paid, both sides quiet',
      async () => [await rpc(a, 'list_channels', {}), await rpc(b, 'list_channels', {})],
      (xs) =>
        xs.every((x: any) => {
          const c = x.channels.find((c: any) => c.channel_id === id);
          return c?.pending_tlcs.length === 0;
        }) && xs[1].channels.find((c: any) => c.channel_id === id).local_balance === hex(288n * CKB),
    );
    await until(
      'the tower knows the channel',
      async () =>
        readDb<{ channel_id: string; data: string }>(tower, 'SELECT channel_id, data FROM watch_channels'),
      (rows) =>
        rows.some((r) => r.channel_id === id && fromJsonText<WatchedChannel>(r.data).revocationData !== null),
    );
    await b.stop();
    const client = createChainClient({ rpcUrl: chain.url });
    const bLock = bInfo.default_funding_lock_script;
    const bBefore = await client.getCellsCapacity({ script: bLock, script_type: 'lock' });
    const commitmentHash = (await rpc(a, 'list_channels', {})).channels.find((c: any) => c.channel_id === id)
      .latest_commitment_transaction_hash as string;
    await rpc(a, 'shutdown_channel', { channel_id: id, force: true });
    const commitment = (await until(
      'commitment committed',
      () => client.getTransaction(commitmentHash),
      (x) => x?.tx_status.status === 'committed',
    )) as any;
    const feeC = 750n * CKB - BigInt(commitment.transaction.outputs[0].capacity);
    // B's 288 + 62 arrive at B's script while B is offline: the tower signed with B's key.
    const gained = await until(
      "B's share on chain",
      async () => (await client.getCellsCapacity({ script: bLock, script_type: 'lock' })) - bBefore,
      (g) => g > 0n,
      90_000,
    );
    expect(gained).toBeLessThanOrEqual(350n * CKB);
    expect(gained).toBeGreaterThanOrEqual(350n * CKB - feeC);
  }, 240_000);
});
