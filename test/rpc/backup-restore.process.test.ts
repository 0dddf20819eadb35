/**
 * Restoring a node from `backup_now` taken while payments flow over a channel (real processes:
 * dev chain, A and B, a channel A → B, keysend payments A → B):
 * - a backup taken while the channel is idle restores to a node whose channel reestablishes
 *   (confirmed current by the peer's numbers) and carries payments again;
 * - a backup taken mid-storm and then overtaken by more payments is outdated: the restored node
 *   finds out from the peer's ReestablishChannel, marks the channel, never publishes its (revoked)
 *   commitment and asks for a force close; A closes with its latest commitment, and B gets its
 *   whole latest balance back on chain — more than the outdated backup knew — without any
 *   revocation (nobody is punished).
 * The README's restore procedure is followed: the three files copied into a fresh directory.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChainClient } from '../../src/chain/client.ts';
import { commitmentNumberOf } from '../../src/channel/commitment-number.ts';
import { type Channel, deserializeChannel } from '../../src/channel/state.ts';
import { CKB, connect, type DevchainProcess, rpc, startDevchain, until } from '../channel/process-helpers.ts';
import { type NodeProcess, startNode, tempDir } from '../helpers/node-process.ts';

const FIXTURES = path.resolve(import.meta.dirname, '../fixtures/fiber-test-nodes');
const MODULES = ['info', 'peer', 'channel', 'payment', 'invoice', 'graph', 'admin', 'dev'];
const PAYMENT = 1n * CKB;
const hex = (v: bigint) => `0x${v.toString(16)}`;
const RESTORE_FILES = ['fiber/sk', 'fiber/store/strand.db', 'ckb/key'];

let chain: DevchainProcess;
let a: NodeProcess;
let b: NodeProcess;
let bInfo: any;

/** A node with fixture `n`'s keys (or on an existing home), with the payment and admin modules. */
function startPayNode(n: number, fiber: Record<string, unknown>, dir?: string): Promise<NodeProcess> {
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
      fiber: {
        chain: 'dev',
        listening_addr: '/ip4/127.0.0.1/tcp/0',
        watchtower_check_interval_seconds: 1,
        ...fiber,
      },
      rpc: { listening_addr: '127.0.0.1:0', enabled_modules: MODULES },
      services: ['fiber', 'rpc', 'ckb'],
      ckb: { rpc_url: chain.url },
    },
    env: { FIBER_SECRET_KEY_PASSWORD: 'password1' },
  });
}

const B_FIBER = { auto_accept_channel_ckb_funding_amount: Number(250n * CKB) };

/** The README's restore: the backup's three files into an empty base directory. */
function restoreInto(backup: string): string {
  const home = tempDir('strand-restored-');
  for (const f of RESTORE_FILES) {
    fs.mkdirSync(path.dirname(path.join(home, f)), { recursive: true });
    fs.copyFileSync(path.join(backup, f), path.join(home, f));
  }
  return home;
}

/** One keysend payment A → B, to Success (retried while the route is not known yet). */
async function pay(): Promise<void> {
  let hash = '';
  const giveUp = Date.now() + 60_000;
  while (!hash) {
    const r = await a.call('send_payment', [
      { target_pubkey: bInfo.pubkey, amount: hex(PAYMENT), keysend: true },
    ]);
    if (r.result) hash = r.result.payment_hash;
    else if (!/Failed to build route/.test(r.error?.message ?? '') || Date.now() > giveUp)
      throw new Error(`send_payment: ${r.error?.message}`);
    else await new Promise((res) => setTimeout(res, 200));
  }
  const p = await until(
    'payment done',
    () => rpc(a, 'get_payment', { payment_hash: hash }),
    (x) => x.status === 'Success' || x.status === 'Failed',
  );
  if (p.status !== 'Success') throw new Error(`payment failed: ${p.failed_error}`);
}

/** `count` payments, `inFlight` at a time. */
async function storm(count: number, inFlight: number): Promise<void> {
  let started = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (started < count) {
        started++;
        await pay();
      }
    }),
  );
}

const channelOf = async (node: NodeProcess) =>
  (await rpc(node, 'list_channels', { include_closed: true })).channels[0];

/** Both sides agree, nothing pending: the channel is idle at `paid` payments. */
async function idleAt(paid: number): Promise<void> {
  const want = 438n * CKB - BigInt(paid) * PAYMENT;
  await until(
    `channel idle after ${paid} payments`,
    async () => [await channelOf(a), await channelOf(b)],
    ([x, y]) =>
      BigInt(x.local_balance) === want &&
      BigInt(y.remote_balance) === want &&
      x.pending_tlcs.length === 0 &&
      y.pending_tlcs.length === 0,
  );
}

/** The channel rows in a backup's store, read from the file. */
function backupChannels(backup: string): Channel[] {
  const db = new Database(path.join(backup, 'fiber/store/strand.db'), { readonly: true });
  try {
    return (db.prepare('SELECT data FROM channels').all() as { data: string }[]).map((r) =>
      deserializeChannel(r.data),
    );
  } finally {
    db.close();
  }
}
const backupFlags = (backup: string) => backupChannels(backup).map((ch) => ch.flags);

beforeAll(async () => {
  chain = await startDevchain([1, 2], 5000, 200, 10);
  a = await startPayNode(1, {});
  b = await startPayNode(2, B_FIBER);
  ({ bInfo } = await connect(a, b));
}, 120_000);

afterAll(async () => {
  if (process.env.DEBUG_RESTORE) console.log(a?.output().slice(-6000), '\n----\n', b?.output().slice(-6000));
  await a?.stop();
  await b?.stop();
  await chain?.stop();
});

describe('restoring a backup taken during a payment storm', () => {
  it('a current backup reestablishes; an outdated one is recovered through the peer, never punished', async () => {
    await rpc(a, 'open_channel', { pubkey: bInfo.pubkey, funding_amount: hex(500n * CKB), public: true });
    for (const n of [a, b])
      await until(
        'CHANNEL_READY',
        () => channelOf(n),
        (c) => c?.state.state_name === 'CHANNEL_READY',
      );

    // 6 payments, then a backup of B while 6 more are in flight, then 6 more: the backup is
    // outdated by at least 12 TLC rounds.
    await storm(6, 3);
    const stale = path.join(tempDir('strand-backup-'), 'mid-storm');
    const during = storm(6, 3);
    const r = await rpc(b, 'backup_now', { path: stale });
    await during;
    expect(r.path).toBe(stale);
    await storm(6, 3);
    await idleAt(18);
    const manifest = JSON.parse(fs.readFileSync(path.join(stale, 'backup.json'), 'utf8'));
    expect(manifest.channels).toHaveLength(1);
    const staleBalance = BigInt(manifest.channels[0].local_balance);
    expect(staleBalance).toBeLessThanOrEqual(188n * CKB + 12n * PAYMENT);
    expect(backupFlags(stale)).toEqual([['RESTORED_FROM_BACKUP']]);

    // An idle channel: this backup is current.
    const current = path.join(tempDir('strand-backup-'), 'idle');
    await rpc(b, 'backup_now', { path: current });
    const checkpoint = JSON.parse(fs.readFileSync(path.join(current, 'backup.json'), 'utf8')).channels[0];
    expect(BigInt(checkpoint.local_balance)).toBe(188n * CKB + 18n * PAYMENT);
    // The live store is never marked: only the copy.
    expect((await channelOf(b)).state.state_flags).toEqual([]);
    await b.stop();

    // ---- restore the current backup: the channel reestablishes and carries payments --------
    b = await startPayNode(2, B_FIBER, restoreInto(current));
    expect((await rpc(b, 'node_info', undefined)).pubkey).toBe(bInfo.pubkey);
    const before = await channelOf(b);
    expect(before.state.state_flags).toEqual(['RESTORED_FROM_BACKUP']);
    const refused = await b.call('shutdown_channel', [{ channel_id: before.channel_id, force: true }]);
    expect(refused.error?.message).toContain('restored from a backup');
    await connect(a, b);
    await until(
      'restored channel confirmed current',
      () => channelOf(b),
      (c) => c.state.state_name === 'CHANNEL_READY' && c.state.state_flags.length === 0,
    );
    await storm(2, 1);
    await idleAt(20);
    await b.stop();

    // ---- restore the outdated backup ---------------------------------------------------------
    const client = createChainClient({ rpcUrl: chain.url });
    const bLock = {
      script: bInfo.default_funding_lock_script,
      script_type: 'lock' as const,
      script_search_mode: 'exact' as const,
    };
    const walletBefore = await client.getCellsCapacity(bLock);
    const aSide = await channelOf(a);
    // B's share of A's latest commitment: its balance and its 62-CKB reserve.
    const bShare = BigInt(aSide.remote_balance) + 62n * CKB;
    expect(bShare).toBe(250n * CKB + 20n * PAYMENT);
    b = await startPayNode(2, B_FIBER, restoreInto(stale));
    await connect(a, b);
    const marked = await until(
      'outdated state detected',
      () => channelOf(b),
      (c) => c.state.state_flags.includes('LOCAL_STATE_OUTDATED'),
    );
    expect(marked.failure_detail).toContain('our channel state is outdated');
    // The alarm is logged as the step's effect, after the state is readable, and the log is
    // written asynchronously: wait for the line rather than race it.
    await until(
      'the channel state alarm in the log',
      async () => b.output(),
      (out) => out.includes('channel state alarm'),
    );
    const refusedAgain = await b.call('shutdown_channel', [{ channel_id: marked.channel_id, force: true }]);
    expect(refusedAgain.error?.message).toContain('outdated');
    // Named by its number, the restored (revoked) commitment is found — and still refused.
    const staleNumber = commitmentNumberOf(backupChannels(stale)[0]!.latestCommitmentTx as string);
    const dev = await b.call('submit_commitment_transaction', [
      { channel_id: marked.channel_id, commitment_number: hex(staleNumber) },
    ]);
    expect(dev.error?.message).toContain('outdated');

    // A closes with its latest commitment; both sides settle after the delay.
    const closedA = await until(
      'A settled',
      () => channelOf(a),
      (c) => c.state.state_name === 'CLOSED' && !c.state.state_flags.includes('WAITING_ONCHAIN_SETTLEMENT'),
      90_000,
    );
    expect(closedA.state.state_flags).toEqual(['UNCOOPERATIVE_LOCAL']);
    expect(closedA.failure_detail).toContain("the peer's channel state is outdated");
    expect(closedA.shutdown_transaction_hash).toBe(aSide.latest_commitment_transaction_hash);
    const closedB = await until(
      'B settled',
      () => channelOf(b),
      (c) => c.state.state_name === 'CLOSED' && !c.state.state_flags.includes('WAITING_ONCHAIN_SETTLEMENT'),
      90_000,
    );
    expect(closedB.state.state_flags).toEqual(['UNCOOPERATIVE_REMOTE', 'LOCAL_STATE_OUTDATED']);
    // The funding cell went to A's commitment, not to B's outdated one.
    expect(closedB.shutdown_transaction_hash).toBe(aSide.latest_commitment_transaction_hash);

    // B's wallet got its whole latest share (less the commitment and settlement fees), far more
    // than the outdated backup's balance.
    const commitment = (await client.getTransaction(aSide.latest_commitment_transaction_hash)) as any;
    const commitmentFee = 750n * CKB - BigInt(commitment.transaction.outputs[0].capacity);
    const gained = await until(
      "B's share in its wallet",
      async () => (await client.getCellsCapacity(bLock)) - walletBefore,
      (x) => x > 0n,
    );
    expect(gained).toBeLessThanOrEqual(bShare - commitmentFee);
    expect(gained).toBeGreaterThan(bShare - commitmentFee - CKB / 100n);
    expect(gained).toBeGreaterThan(staleBalance + 62n * CKB);
    // Nobody was punished: no revocation on either side.
    for (const n of [a, b]) expect(n.output()).not.toContain('revoked commitment');
  }, 300_000);
});
