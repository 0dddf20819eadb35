/**
 * The breach (real processes): A and B have a channel, a TLC moves 100 CKB from A to B, then A
 * goes away and its old commitment — where A still had everything — lands on chain. B's
 * built-in watchtower sees a commitment whose version B holds a revocation for and sends the
 * revocation transaction: the whole commitment cell goes to B's shutdown script; A gets nothing.
 */
import { ccc } from '@ckb-ccc/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChainClient } from '../../src/chain/client.ts';
import {
  CKB,
  connect,
  type DevchainProcess,
  rpc,
  startChannelNode,
  startDevchain,
} from '../channel/process-helpers.ts';
import type { NodeProcess } from '../helpers/node-process.ts';
import {
  awaitSweep,
  hex,
  openReady,
  payByTlc,
  publishCommitment,
  storedCommitment,
} from './breach-helpers.ts';

let chain: DevchainProcess;
let a: NodeProcess;
let b: NodeProcess;
let aInfo: any;
let bInfo: any;

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
    const id = await openReady(a, b, {
      pubkey: bInfo.pubkey,
      funding_amount: hex(500n * CKB),
      public: false,
    });
    const old = storedCommitment(a);
    const ready = await rpc(a, 'list_channels', {});
    expect(old.hash).toBe(ready.channels[0].latest_commitment_transaction_hash);

    // 100 CKB from A to B through a fulfilled TLC: two rounds, each revoking A's commitment.
    await payByTlc(a, b, id, 100n * CKB);
    expect((await rpc(a, 'list_channels', {})).channels[0].remote_balance).toBe(hex(288n * CKB));
    expect(storedCommitment(a).hash).not.toBe(old.hash);

    // A leaves and publishes its first commitment (438 CKB its own, 188 B's).
    await a.stop();
    const client = createChainClient({ rpcUrl: chain.url });
    const aLock = aInfo.default_funding_lock_script;
    const aBefore = await client.getCellsCapacity({
      script: aLock,
      script_type: 'lock',
      script_search_mode: 'exact',
    });
    // The cheater also sends a cell to the funding lock, so that the newest indexer row of that
    // lock is an output, hiding the spend from a watchtower that looks at one row only.
    const funding = ccc.Transaction.fromBytes(old.tx).inputs[0]!.previousOutput;
    const fundingTx = (await client.getTransaction(funding.txHash)) as any;
    const { hash, capacity: commitmentCapacity } = await publishCommitment(client, old, undefined, () =>
      client.call('faucet', [fundingTx.transaction.outputs[Number(funding.index)].lock, hex(61n * CKB)]),
    );
    expect(hash).toBe(old.hash);

    // B's watchtower spends it with the revocation it holds.
    const bLock = bInfo.default_funding_lock_script;
    const { cell, rev } = await awaitSweep(client, bLock, commitmentCapacity);
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
