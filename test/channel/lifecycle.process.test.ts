/**
 * The channel lifecycle's remainders between real processes on a dev chain, driven over JSON-RPC:
 * - a cooperative close requested while a TLC is pending completes once the TLC resolves, with
 *   exact amounts on chain, and no new TLC is taken meanwhile;
 * - `update_channel` on a public channel reaches the peer's graph as a new ChannelUpdate;
 * - a round the peer leaves unanswered (process stopped) drops the session; the reconnection's
 *   reestablish completes the round;
 * - a TLC offered to a peer that went offline forces a close before its expiry, and the offerer's
 *   watchtower takes the TLC amount back on chain once it has expired.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ccc } from '@ckb-ccc/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChainClient } from '../../src/chain/client.ts';
import { ckbHash } from '../../src/crypto/hash.ts';
import { type NodeProcess, startNode, tempDir } from '../helpers/node-process.ts';
import { CKB, connect, type DevchainProcess, rpc, startDevchain, until } from './process-helpers.ts';

const FIXTURES = path.resolve(import.meta.dirname, '../fixtures/fiber-test-nodes');
const hex = (v: bigint) => `0x${v.toString(16)}`;
const FAST = {
  watchtower_check_interval_seconds: 1,
  check_channels_interval_ms: 300,
  peer_response_timeout_ms: 2000,
};
let chain: DevchainProcess;
let a: NodeProcess;
let b: NodeProcess;
let c: NodeProcess;
let info: Record<'a' | 'b' | 'c', any>;

beforeAll(async () => {
  chain = await startDevchain([1, 2, 3], 5000, 200, 10);
  const accept = { auto_accept_channel_ckb_funding_amount: Number(250n * CKB), ...FAST };
  [a, b, c] = await Promise.all([start(1, FAST), start(2, accept), start(3, accept)]);
  const ab = await connect(a, b);
  const ac = await connect(a, c);
  info = { a: ab.aInfo, b: ab.bInfo, c: ac.bInfo };
}, 120_000);

afterAll(async () => {
  if (process.env.DEBUG_CH)
    for (const n of [a, b, c]) console.log(n?.output().slice(-6000), '\n----------------\n');
  if (b?.proc.exitCode === null) b.proc.kill('SIGCONT');
  await Promise.all([a?.stop(), b?.stop(), c?.stop()]);
  await chain?.stop();
});

/** A fixture node with the payment module too (its dry runs show what is routable). */
function start(n: number, fiber: Record<string, unknown>): Promise<NodeProcess> {
  const dir = tempDir();
  fs.mkdirSync(path.join(dir, 'ckb'), { recursive: true });
  fs.mkdirSync(path.join(dir, 'fiber'), { recursive: true });
  fs.copyFileSync(path.join(FIXTURES, `${n}/ckb/plain_key`), path.join(dir, 'ckb/key'));
  fs.copyFileSync(path.join(FIXTURES, `${n}/fiber/sk`), path.join(dir, 'fiber/sk'));
  return startNode({
    dir,
    config: {
      fiber: { chain: 'dev', listening_addr: '/ip4/127.0.0.1/tcp/0', ...fiber },
      rpc: {
        listening_addr: '127.0.0.1:0',
        enabled_modules: ['info', 'peer', 'channel', 'dev', 'graph', 'payment'],
      },
      services: ['fiber', 'rpc', 'ckb'],
      ckb: { rpc_url: chain.url },
    },
    env: { FIBER_SECRET_KEY_PASSWORD: 'password1' },
  });
}

const channelOf = async (n: NodeProcess, id: string) =>
  (await rpc(n, 'list_channels', { include_closed: true })).channels.find((x: any) => x.channel_id === id);

/** Opens `from` → `to` (500 CKB, the peer adding 250) and waits for CHANNEL_READY on both. */
async function open(from: NodeProcess, to: NodeProcess, toInfo: any, isPublic: boolean): Promise<string> {
  const before = new Set(
    (await rpc(from, 'list_channels', { include_closed: true })).channels.map((x: any) => x.channel_id),
  );
  await rpc(from, 'open_channel', {
    pubkey: toInfo.pubkey,
    funding_amount: hex(500n * CKB),
    public: isPublic,
  });
  const list = await until(
    'channel ready',
    () => rpc(from, 'list_channels', {}),
    (x) =>
      x.channels.some((ch: any) => !before.has(ch.channel_id) && ch.state.state_name === 'CHANNEL_READY'),
  );
  const id = list.channels.find((ch: any) => !before.has(ch.channel_id)).channel_id as string;
  await until(
    'peer ready',
    () => channelOf(to, id),
    (ch) => ch?.state.state_name === 'CHANNEL_READY',
  );
  return id;
}

async function addTlc(n: NodeProcess, id: string, amount: bigint, preimage: string, expiryMs: number) {
  return rpc(n, 'add_tlc', {
    channel_id: id,
    amount: hex(amount),
    payment_hash: ccc.hexFrom(ckbHash(ccc.bytesFrom(preimage))),
    expiry: hex(BigInt(Date.now() + expiryMs)),
  });
}

const committed = (n: NodeProcess, id: string, dir: 'Inbound' | 'Outbound') =>
  until(
    `TLC committed (${dir})`,
    () => channelOf(n, id),
    (ch) => ch?.pending_tlcs[0]?.status?.[dir] === 'Committed',
  );

const client = () => createChainClient({ rpcUrl: chain.url });

describe('channel lifecycle between processes', () => {
  it('a cooperative close waits for the pending TLC, then pays each side exactly', async () => {
    const id = await open(a, b, info.b, false);
    const preimage = `0x${'61'.repeat(32)}`;
    await addTlc(a, id, 100n * CKB, preimage, 3_600_000);
    await committed(b, id, 'Inbound');
    await committed(a, id, 'Outbound');
    await rpc(a, 'shutdown_channel', { channel_id: id });
    for (const n of [a, b])
      await until(
        'both Shutdowns',
        () => channelOf(n, id),
        (ch) =>
          ch.state.state_name === 'SHUTTING_DOWN' && ch.state.state_flags.includes('THEIR_SHUTDOWN_SENT'),
      );
    // Still open for the pending TLC, closed to new ones.
    const refused = await a.call('add_tlc', [
      {
        channel_id: id,
        amount: hex(CKB),
        payment_hash: `0x${'00'.repeat(32)}`,
        expiry: hex(BigInt(Date.now() + 3_600_000)),
      },
    ]);
    expect(refused.error?.message).toBe(
      'Invalid state: Invalid state ShuttingDown(ShuttingDownFlags(OUR_SHUTDOWN_SENT | THEIR_SHUTDOWN_SENT)) for adding tlc',
    );
    expect((await channelOf(a, id)).shutdown_transaction_hash).toBeNull();
    await rpc(b, 'remove_tlc', { channel_id: id, tlc_id: '0x0', reason: { payment_preimage: preimage } });
    const closed = await until(
      'closed',
      () => channelOf(a, id),
      (ch) => ch.state.state_name === 'CLOSED',
    );
    expect(closed.state.state_flags).toEqual(['COOPERATIVE']);
    await until(
      'B closed',
      () => channelOf(b, id),
      (ch) => ch.state.state_name === 'CLOSED',
    );
    const tx = (await client().getTransaction(closed.shutdown_transaction_hash)) as any;
    const outputs = tx.transaction.outputs as any[];
    const to = (lock: any) =>
      BigInt(outputs.find((o) => o.lock.args === lock.args && o.lock.code_hash === lock.code_hash).capacity);
    const fee = 750n * CKB - outputs.reduce((x, o) => x + BigInt(o.capacity), 0n);
    expect(fee).toBeGreaterThan(0n);
    expect(fee).toBeLessThan(CKB / 100n);
    // A: 338 + 62 − the whole fee; B: 188 + 100 (the TLC) + 62.
    expect(to(info.a.default_funding_lock_script)).toBe(400n * CKB - fee);
    expect(to(info.b.default_funding_lock_script)).toBe(350n * CKB);
  }, 180_000);

  it('update_channel reaches the peer’s graph; a disabled direction is no longer routable', async () => {
    const id = await open(a, b, info.b, true);
    const { channel_outpoint: outpoint } = await channelOf(a, id);
    const direction = (g: any) => {
      const ch = g.channels.find((x: any) => x.channel_outpoint === outpoint);
      if (!ch) return undefined;
      return ch.node1 === info.a.pubkey ? ch.update_info_of_node1 : ch.update_info_of_node2;
    };
    await until(
      'announced',
      () => rpc(b, 'graph_channels', {}),
      (g) => direction(g)?.enabled === true,
    );
    // A's payment to B finds this channel (the one closed above is gone) …
    const probe = () =>
      a.call('send_payment', [
        { target_pubkey: info.b.pubkey, amount: hex(CKB), keysend: true, dry_run: true },
      ]);
    expect((await probe()).error).toBeUndefined();
    await rpc(a, 'update_channel', { channel_id: id, tlc_fee_proportional_millionths: hex(4321n) });
    const g1 = await until(
      'new fee seen by B',
      () => rpc(b, 'graph_channels', {}),
      (g) => direction(g)?.fee_rate === hex(4321n),
    );
    expect(direction(g1).enabled).toBe(true);
    await rpc(a, 'update_channel', { channel_id: id, enabled: false });
    const g2 = await until(
      'disabled seen by B',
      () => rpc(b, 'graph_channels', {}),
      (g) => direction(g)?.enabled === false,
    );
    // Only what was given changed.
    expect(direction(g2).fee_rate).toBe(hex(4321n));
    expect((await channelOf(a, id)).enabled).toBe(false);
    // … and no longer once it is disabled.
    expect((await probe()).error?.message).toMatch(/Failed to build route/);
  }, 120_000);

  it('an unanswered TLC round drops the session; after the reconnection the round completes', async () => {
    const id = await open(a, b, info.b, false);
    b.proc.kill('SIGSTOP');
    try {
      await addTlc(a, id, 10n * CKB, `0x${'62'.repeat(32)}`, 3_600_000);
      await until(
        'timeout hit',
        async () => a.output(),
        (o) => /peer response timeout/.test(o),
        20_000,
      );
    } finally {
      b.proc.kill('SIGCONT');
    }
    await committed(b, id, 'Inbound');
    await committed(a, id, 'Outbound');
    expect(a.output()).toMatch(/"reason":"peer response timeout"[^\n]*p2p peer disconnected/);
    const ch = await channelOf(a, id);
    expect(BigInt(ch.local_balance)).toBe(428n * CKB);
  }, 120_000);

  it('a TLC to a peer gone offline forces a close before expiry; the offerer takes it back after', async () => {
    const id = await open(a, c, info.c, false);
    await addTlc(a, id, 100n * CKB, `0x${'63'.repeat(32)}`, 15_000);
    await committed(c, id, 'Inbound');
    await committed(a, id, 'Outbound');
    const before = await client().getCellsCapacity({
      script: info.a.default_funding_lock_script,
      script_type: 'lock',
    });
    await c.stop();
    // No command: the expiry check closes the channel on its own.
    const closing = await until(
      'force closed',
      () => channelOf(a, id),
      (ch) =>
        ch.state.state_name === 'CLOSED' || ch.state.state_flags.includes('WAITING_COMMITMENT_CONFIRMATION'),
      40_000,
    );
    const commitmentHash = closing.shutdown_transaction_hash as string;
    const commitment = (await until(
      'commitment on chain',
      () => client().getTransaction(commitmentHash),
      (x: any) => x?.tx_status.status === 'committed',
    )) as any;
    const feeC = 750n * CKB - BigInt(commitment.transaction.outputs[0].capacity);
    // A's 400 (338 + reserve) and the expired 100 come back, less the commitment and settlement fees.
    const gain = await until(
      'A settled its share and the TLC',
      async () =>
        (await client().getCellsCapacity({
          script: info.a.default_funding_lock_script,
          script_type: 'lock',
        })) - before,
      (g) => g > 500n * CKB - feeC - CKB / 100n,
      120_000,
    );
    expect(gain).toBeLessThanOrEqual(500n * CKB);
    expect((await channelOf(a, id)).state.state_flags).toContain('UNCOOPERATIVE_LOCAL');
  }, 240_000);
});
