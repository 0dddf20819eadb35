/**
 * The breach (real processes): A and B have a channel, a TLC moves 100 CKB from A to B, then A
 * goes away and its old commitment — where A still had everything — lands on chain. B's
 * built-in watchtower sees a commitment whose version B holds a revocation for and sends the
 * revocation transaction: the whole commitment cell goes to B's shutdown script; A gets nothing.
 */
import path from 'node:path';
import { ccc } from '@ckb-ccc/core';
import { cccA } from '@ckb-ccc/core/advanced';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChainClient } from '../../src/chain/client.ts';
import { deserializeChannel } from '../../src/channel/state.ts';
import { ckbHash } from '../../src/crypto/hash.ts';
import {
  CKB,
  connect,
  type DevchainProcess,
  rpc,
  startChannelNode,
  startDevchain,
  until,
} from '../channel/process-helpers.ts';
import type { NodeProcess } from '../helpers/node-process.ts';

const hex = (v: bigint) => `0x${v.toString(16)}`;
let chain: DevchainProcess;
let a: NodeProcess;
let b: NodeProcess;
let aInfo: any;
let bInfo: any;

/** The cheater's stored latest commitment (molecule hex), read from its database. */
function storedCommitment(node: NodeProcess): { tx: string; hash: string } {
  const db = new Database(path.join(node.dir, 'fiber/store/strand.db'), { readonly: true });
  try {
    const row = db.prepare('SELECT data FROM channels').get() as { data: string };
    const ch = deserializeChannel(row.data);
    return { tx: ch.latestCommitmentTx as string, hash: ch.latestCommitmentTxHash as string };
  } finally {
    db.close();
  }
}

beforeAll(async () => {
  chain = await startDevchain([1, 2], 5000, 200, 10);
  a = await startChannelNode(1, chain.url, { watchtower_check_interval_seconds: 1 });
  b = await startChannelNode(2, chain.url, {
    auto_accept_channel_ckb_funding_amount: Number(250n * CKB),
    watchtower_check_interval_seconds: 1,
  });
  ({ aInfo, bInfo } = await connect(a, b));
}, 120_000);

afterAll(async () => {
  if (process.env.DEBUG_WT) console.log(b?.output().slice(-4000));
  await a?.stop();
  await b?.stop();
  await chain?.stop();
});

describe('watchtower', () => {
  it('sweeps a revoked commitment: the cheater gets nothing, the honest side everything', async () => {
    await rpc(a, 'open_channel', { pubkey: bInfo.pubkey, funding_amount: hex(500n * CKB), public: false });
    const ready = await until(
      'ready',
      () => rpc(a, 'list_channels', {}),
      (x) => x.channels[0]?.state.state_name === 'CHANNEL_READY',
    );
    await until(
      'B ready',
      () => rpc(b, 'list_channels', {}),
      (x) => x.channels[0]?.state.state_name === 'CHANNEL_READY',
    );
    const id = ready.channels[0].channel_id as string;
    const old = storedCommitment(a);
    expect(old.hash).toBe(ready.channels[0].latest_commitment_transaction_hash);

    // 100 CKB from A to B through a fulfilled TLC: two rounds, each revoking A's commitment.
    const preimage = `0x${'42'.repeat(32)}`;
    await rpc(a, 'add_tlc', {
      channel_id: id,
      amount: hex(100n * CKB),
      payment_hash: ccc.hexFrom(ckbHash(ccc.bytesFrom(preimage))),
      expiry: hex(BigInt(Date.now() + 3_600_000)),
    });
    await until(
      'TLC committed at B',
      () => rpc(b, 'list_channels', {}),
      (x) => x.channels[0]?.pending_tlcs[0]?.status?.Inbound === 'Committed',
    );
    await rpc(b, 'remove_tlc', { channel_id: id, tlc_id: '0x0', reason: { payment_preimage: preimage } });
    await until(
      'TLC removed at A',
      () => rpc(a, 'list_channels', {}),
      (x) => x.channels[0]?.pending_tlcs.length === 0 && x.channels[0]?.remote_balance === hex(288n * CKB),
    );
    expect(storedCommitment(a).hash).not.toBe(old.hash);

    // A leaves and publishes its first commitment (438 CKB its own, 188 B's).
    await a.stop();
    const client = createChainClient({ rpcUrl: chain.url });
    const scripts = await client.call<any>('get_dev_scripts');
    const cheat = ccc.Transaction.fromBytes(old.tx);
    cheat.cellDeps = scripts.funding_lock.cell_deps.map((d: any) => cccA.JsonRpcTransformers.cellDepTo(d));
    const aLock = aInfo.default_funding_lock_script;
    const aBefore = await client.getCellsCapacity({
      script: aLock,
      script_type: 'lock',
      script_search_mode: 'exact',
    });
    expect(await client.sendTransaction(cheat)).toBe(old.hash);
    // The cheater also sends a cell to the funding lock, so that the newest indexer row of that
    // lock is an output, hiding the spend from a watchtower that looks at one row only.
    const fundingOut = cheat.inputs[0]!.previousOutput;
    const fundingTx = (await client.getTransaction(fundingOut.txHash)) as any;
    await client.call('faucet', [
      fundingTx.transaction.outputs[Number(fundingOut.index)].lock,
      hex(61n * CKB),
    ]);
    const committed = await until(
      'old commitment committed',
      () => client.getTransaction(old.hash),
      (x) => x?.tx_status.status === 'committed',
    );
    const commitmentCapacity = BigInt((committed as any).transaction.outputs[0].capacity);

    // B's watchtower spends it with the revocation it holds.
    const bLock = bInfo.default_funding_lock_script;
    const swept = await until(
      'revocation committed',
      () => client.getCells({ script: bLock, script_type: 'lock', script_search_mode: 'exact' }, 'desc', 50),
      (x) => x.objects.some((c) => BigInt(c.output.capacity) === commitmentCapacity),
      60_000,
    );
    const cell = swept.objects.find((c) => BigInt(c.output.capacity) === commitmentCapacity)!;
    const rev = (await client.getTransaction(cell.out_point.tx_hash)) as any;
    expect(rev.tx_status.status).toBe('committed');
    expect(rev.transaction.inputs[0].previous_output).toEqual({ tx_hash: old.hash, index: '0x0' });
    expect(cell.out_point.index).toBe('0x0');
    // Everything in the commitment cell (500 + 250 CKB − the commitment fee) is B's now …
    expect(750n * CKB - commitmentCapacity).toBeGreaterThan(0n);
    expect(750n * CKB - commitmentCapacity).toBeLessThan(CKB);
    // … nothing of it went to A: no output of the sweep is A's, and A's wallet did not grow.
    for (const o of rev.transaction.outputs) expect(o.lock).not.toEqual(aLock);
    const aAfter = await client.getCellsCapacity({
      script: aLock,
      script_type: 'lock',
      script_search_mode: 'exact',
    });
    expect(aAfter).toBe(aBefore);
    // The commitment cell is gone: nothing left for A to settle after the delay.
    const live = await client.getLiveCell({ txHash: old.hash, index: 0 }, false);
    expect(live.status).not.toBe('live');
    // B paid the fee from its own cells (the other inputs are B's wallet cells).
    expect(rev.transaction.inputs.length).toBeGreaterThan(1);
    expect(rev.transaction.outputs[1].lock).toEqual(bLock);
  }, 180_000);
});
