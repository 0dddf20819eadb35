/**
 * The breach on a UDT channel (real processes): A funds 600 tokens, pays B 100 through a TLC,
 * then publishes its first commitment (600 / 0). B's watchtower sweeps the commitment cell with
 * the UDT type and its 600 tokens to B's shutdown script.
 */
import { ccc } from '@ckb-ccc/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChainClient } from '../../src/chain/client.ts';
import {
  connect,
  type DevchainProcess,
  rpc,
  startChannelNode,
  startDevchain,
  testUdtWhitelist,
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
let bInfo: any;
let udt: { code_hash: string; hash_type: string; args: string };

beforeAll(async () => {
  chain = await startDevchain([1, 2], 5000, 200, 10, 1000);
  const t = await testUdtWhitelist(chain.url);
  udt = t.udt;
  const whitelist = t.whitelist;
  const fiber = { watchtower_check_interval_seconds: 1 };
  a = await startChannelNode(1, chain.url, fiber, undefined, { udt_whitelist: whitelist });
  b = await startChannelNode(2, chain.url, fiber, undefined, { udt_whitelist: whitelist });
  ({ bInfo } = await connect(a, b));
}, 120_000);

afterAll(async () => {
  if (process.env.DEBUG_WT) console.log(b?.output().slice(-4000));
  await a?.stop();
  await b?.stop();
  await chain?.stop();
});

describe('watchtower on a UDT channel', () => {
  it('sweeps the revoked commitment with all its tokens to the honest side', async () => {
    const id = await openReady(a, b, {
      pubkey: bInfo.pubkey,
      funding_amount: hex(600n),
      funding_udt_type_script: udt,
      public: false,
    });
    const first = storedCommitment(a);
    await payByTlc(a, b, id, 100n, '08');
    expect((await rpc(a, 'list_channels', {})).channels[0].remote_balance).toBe(hex(100n));
    await a.stop();

    const client = createChainClient({ rpcUrl: chain.url });
    const { hash, tx, capacity } = await publishCommitment(client, first, ['funding_lock', 'test_udt']);
    expect(ccc.numLeFromBytes(ccc.bytesFrom(tx.outputs_data[0]))).toBe(600n);

    const bLock = bInfo.default_funding_lock_script;
    const { cell, rev } = await awaitSweep(client, bLock, capacity, udt);
    expect(cell.output.type).toEqual(udt);
    expect(rev.transaction.inputs[0].previous_output).toEqual({ tx_hash: hash, index: '0x0' });
    expect(ccc.numLeFromBytes(ccc.bytesFrom(rev.transaction.outputs_data[0]))).toBe(600n);
    expect(rev.transaction.outputs[0].lock).toEqual(bLock);
  }, 180_000);
});
