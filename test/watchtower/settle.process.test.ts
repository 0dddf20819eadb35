/**
 * Force close with a pending TLC (real processes): A offers B a 100-CKB TLC, then force-closes.
 * B's watchtower, told the preimage (`create_preimage`), claims the TLC from A's commitment by
 * preimage, then takes B's share; A's watchtower takes A's share after the delay (the channel
 * layer does not settle commitments with TLCs), and learns the preimage from B's claim. Then an
 * expired TLC back to its offerer when the receiver force-closes, and three TLCs both ways. Each
 * case: a new channel, its TLCs, a force close; checked on chain: each unlock, and what each
 * wallet received.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ccc } from '@ckb-ccc/core';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChainClient } from '../../src/chain/client.ts';
import { ckbHash } from '../../src/crypto/hash.ts';
import { CKB, connect, type DevchainProcess, rpc, startDevchain, until } from '../channel/process-helpers.ts';
import { type NodeProcess, startNode, tempDir } from '../helpers/node-process.ts';
import { addTlc } from './breach-helpers.ts';
import {
  forceCloseOnChain,
  kinds,
  type LockSearch,
  openNewChannel,
  settlementsOnChain,
  spentInputs,
} from './settle-helpers.ts';

const FIXTURES = path.resolve(import.meta.dirname, '../fixtures/fiber-test-nodes');
const hex = (v: bigint) => `0x${v.toString(16)}`;
let chain: DevchainProcess;
let a: NodeProcess;
let b: NodeProcess;

async function startWithTower(n: number, rpcUrl: string, fiber: Record<string, unknown> = {}) {
  const dir = tempDir();
  fs.mkdirSync(path.join(dir, 'ckb'), { recursive: true });
  fs.mkdirSync(path.join(dir, 'fiber'), { recursive: true });
  fs.copyFileSync(path.join(FIXTURES, `${n}/ckb/plain_key`), path.join(dir, 'ckb/key'));
  fs.copyFileSync(path.join(FIXTURES, `${n}/fiber/sk`), path.join(dir, 'fiber/sk'));
  return startNode({
    dir,
    config: {
      fiber: {
        chain: 'dev',
        listening_addr: '/ip4/127.0.0.1/tcp/0',
        watchtower_check_interval_seconds: 1,
        ...fiber,
      },
      rpc: {
        listening_addr: '127.0.0.1:0',
        enabled_modules: ['info', 'peer', 'channel', 'dev', 'watchtower'],
      },
      services: ['fiber', 'rpc', 'ckb'],
      ckb: { rpc_url: rpcUrl },
    },
    env: { FIBER_SECRET_KEY_PASSWORD: 'password1' },
  });
}

beforeAll(async () => {
  chain = await startDevchain([1, 2], 5000, 200, 10);
  a = await startWithTower(1, chain.url);
  b = await startWithTower(2, chain.url, { auto_accept_channel_ckb_funding_amount: Number(250n * CKB) });
  await connect(a, b);
}, 120_000);

afterAll(async () => {
  if (process.env.DEBUG_WT) console.log(a?.output().slice(-5000), b?.output().slice(-5000));
  await a?.stop();
  await b?.stop();
  await chain?.stop();
});

/** A opens a 500-CKB channel to B (B adds 250); its id once both sides list it CHANNEL_READY. */
async function openReadyChannel(): Promise<string> {
  const bInfo = await rpc(b, 'node_info', undefined);
  return openNewChannel(a, b, { pubkey: bInfo.pubkey, funding_amount: hex(500n * CKB), public: false });
}

const channelAt = async (n: NodeProcess, id: string) =>
  (await rpc(n, 'list_channels', {})).channels.find((c: any) => c.channel_id === id);

/** Waits until the channel has `n` TLCs, every one Committed, on both sides. */
function tlcsCommitted(id: string, n: number) {
  return until(
    `${n} TLCs committed on both sides`,
    async () => [await channelAt(a, id), await channelAt(b, id)],
    (chs) =>
      chs.every(
        (c) =>
          c?.pending_tlcs.length === n &&
          c.pending_tlcs.every((t: any) => Object.values(t.status)[0] === 'Committed'),
      ),
  );
}

/** What A's and B's wallets hold now; the returned function tells what each gained since. */
async function walletsNow(): Promise<() => Promise<{ aGain: bigint; bGain: bigint }>> {
  const client = createChainClient({ rpcUrl: chain.url });
  const capacity = async (n: NodeProcess) =>
    client.getCellsCapacity({
      script: (await rpc(n, 'node_info', undefined)).default_funding_lock_script,
      script_type: 'lock',
    });
  const [aBefore, bBefore] = [await capacity(a), await capacity(b)];
  return async () => ({ aGain: (await capacity(a)) - aBefore, bGain: (await capacity(b)) - bBefore });
}

const forceClose = (closer: NodeProcess, id: string) => forceCloseOnChain(chain.url, closer, id);
const settlements = (search: LockSearch) => settlementsOnChain(chain.url, search);

describe('settlement after a force close', () => {
  it('the TLC goes to B by preimage, each side gets its share', async () => {
    const id = await openReadyChannel();
    const preimage = `0x${'44'.repeat(32)}`;
    const paymentHash = ccc.hexFrom(ckbHash(ccc.bytesFrom(preimage)));
    await addTlc(a, {
      channel_id: id,
      amount: hex(100n * CKB),
      payment_hash: paymentHash,
      expiry: hex(BigInt(Date.now() + 3_600_000)),
    });
    await tlcsCommitted(id, 1);
    // B's watchtower learns the preimage (B's node does not fulfil it off chain).
    expect(await rpc(b, 'create_preimage', { payment_hash: paymentHash, preimage })).toBeNull();

    const gains = await walletsNow();
    const { capacity, search } = await forceClose(a, id);

    // Everything under the commitment lock gets settled.
    const settled = await settlements(search);
    for (const s of settled.filter((s) => s.kind === 0)) {
      // The TLC claim carries the preimage.
      expect(s.preimageFlag).toBe(1);
      expect(s.preimage).toBe(preimage);
    }
    expect(kinds(settled)).toEqual([0, 0xfe, 0xff]);
    // A's watchtower learned the preimage B revealed on chain.
    await until(
      'A learned the preimage',
      async () => {
        const db = new Database(path.join(a.dir, 'fiber/store/strand.db'), { readonly: true });
        try {
          return db.prepare('SELECT payment_hash, preimage FROM watch_preimages').all();
        } finally {
          db.close();
        }
      },
      (rows) => rows.some((r: any) => r.payment_hash === paymentHash && r.preimage === preimage),
    );
    const { aGain, bGain } = await gains();
    // B: its 250 CKB (188 + reserve) and the 100-CKB TLC, minus the fees of its two settlements.
    expect(bGain).toBeLessThanOrEqual(350n * CKB);
    expect(bGain).toBeGreaterThan(350n * CKB - CKB / 100n);
    // A: what is left of the cell (its 338 + 62, the commitment fee absorbed), minus one fee.
    const aShare = capacity - 350n * CKB;
    expect(aGain).toBeLessThanOrEqual(aShare);
    expect(aGain).toBeGreaterThan(aShare - CKB / 100n);
  }, 240_000);

  it('an expired TLC goes back to its offerer when the receiver force-closes', async () => {
    const id = await openReadyChannel();
    const paymentHash = ccc.hexFrom(ckbHash(new Uint8Array(32).fill(0x45)));
    // Expires in 20 minutes: the dev chain's clock is moved past it below.
    await addTlc(a, {
      channel_id: id,
      amount: hex(100n * CKB),
      payment_hash: paymentHash,
      expiry: hex(BigInt(Date.now() + 20 * 60_000)),
    });
    await tlcsCommitted(id, 1);
    const gains = await walletsNow();
    const { capacity, search } = await forceClose(b, id);
    const feeC = 750n * CKB - capacity;
    await createChainClient({ rpcUrl: chain.url }).call('increase_time', [hex(3_600_000n)]);
    const settled = await settlements(search);
    for (const s of settled.filter((s) => s.kind === 0)) {
      // The expiry path: no preimage, and a fee input proves the time.
      expect(s.preimageFlag).toBe(0);
      const since = BigInt(s.tx.transaction.inputs[1].since);
      expect(since >> 56n).toBe(0x40n);
    }
    expect(kinds(settled)).toEqual([0, 0xfe, 0xff]);
    // A: its 400 (338 + reserve) and the expired 100; B: its 250. One of them absorbs the
    // commitment fee (whoever settles last), each pays its settlement fees.
    const { aGain, bGain } = await gains();
    expect(aGain).toBeLessThanOrEqual(500n * CKB);
    expect(aGain).toBeGreaterThan(500n * CKB - feeC - CKB / 100n);
    expect(bGain).toBeLessThanOrEqual(250n * CKB);
    expect(bGain).toBeGreaterThan(250n * CKB - feeC - CKB / 100n);
    expect(aGain + bGain).toBeGreaterThan(750n * CKB - feeC - CKB / 50n);
  }, 240_000);

  it('three TLCs both ways: each one settles to its rightful side', async () => {
    const id = await openReadyChannel();
    const pre = (n: number) => ccc.hexFrom(new Uint8Array(32).fill(n));
    const hashOf = (p: string) => ccc.hexFrom(ckbHash(ccc.bytesFrom(p)));
    // 20 minutes ahead of the chain's clock (an earlier test moved it forward).
    const tip = await createChainClient({ rpcUrl: chain.url }).call<any>('get_tip_header');
    const chainNow = BigInt(tip.timestamp) > BigInt(Date.now()) ? BigInt(tip.timestamp) : BigInt(Date.now());
    const expiry = hex(chainNow + 20n * 60_000n);
    const add = async (from: NodeProcess, amount: bigint, p: string) => {
      await until(
        'add_tlc accepted',
        () =>
          from.call('add_tlc', [{ channel_id: id, amount: hex(amount), payment_hash: hashOf(p), expiry }]),
        (r) => !r.error,
      );
    };
    // T1: A → B 50 (B will know the preimage); T2: A → B 30 (nobody does); T3: B → A 20 (A will).
    await add(a, 50n * CKB, pre(0x61));
    await tlcsCommitted(id, 1);
    await add(a, 30n * CKB, pre(0x62));
    await tlcsCommitted(id, 2);
    await add(b, 20n * CKB, pre(0x63));
    await tlcsCommitted(id, 3);
    await rpc(b, 'create_preimage', { payment_hash: hashOf(pre(0x61)), preimage: pre(0x61) });
    await rpc(a, 'create_preimage', { payment_hash: hashOf(pre(0x63)), preimage: pre(0x63) });

    const gains = await walletsNow();
    const { capacity, search } = await forceClose(a, id);
    const feeC = 750n * CKB - capacity;
    // The two preimage claims come first (after a third of the delay); T2 waits for its expiry.
    await until(
      'preimage claims',
      async () => (await spentInputs(createChainClient({ rpcUrl: chain.url }), search)).length,
      (n) => n >= 2,
    );
    await createChainClient({ rpcUrl: chain.url }).call('increase_time', [hex(3_600_000n)]);
    const settled = await settlements(search);
    const tlcEntries = settled.filter((e) => e.kind < 0xfe);
    expect(tlcEntries).toHaveLength(3);
    expect(tlcEntries.map((e) => e.preimage).sort()).toEqual([null, pre(0x61), pre(0x63)].sort());
    expect(kinds(settled.filter((e) => e.kind >= 0xfe))).toEqual([0xfe, 0xff]);
    // A: 358 + 62 of its own, T2 back (30) and T3 (20); B: 168 + 62 and T1 (50). Each pays its
    // settlement fees; whoever settles last absorbs the commitment fee.
    const { aGain, bGain } = await gains();
    expect(aGain).toBeLessThanOrEqual(470n * CKB);
    expect(aGain).toBeGreaterThan(470n * CKB - feeC - CKB / 50n);
    expect(bGain).toBeLessThanOrEqual(280n * CKB);
    expect(bGain).toBeGreaterThan(280n * CKB - feeC - CKB / 50n);
  }, 240_000);
});
