/**
 * The breach on a UDT channel (real processes): A funds 600 tokens, pays B 100 through a TLC,
 * then publishes its first commitment (600 / 0). B's watchtower sweeps the commitment cell with
 * the UDT type and its 600 tokens to B's shutdown script.
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
let bInfo: any;
let udt: { code_hash: string; hash_type: string; args: string };
let scripts: any;

beforeAll(async () => {
  chain = await startDevchain([1, 2], 5000, 200, 10, 1000);
  const client = createChainClient({ rpcUrl: chain.url });
  scripts = await client.call<any>('get_dev_scripts');
  udt = scripts.test_udt.script;
  const whitelist = [
    { name: 'TEST', script: udt, cell_deps: scripts.test_udt.cell_deps, auto_accept_amount: 1 },
  ];
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
    await rpc(a, 'open_channel', {
      pubkey: bInfo.pubkey,
      funding_amount: hex(600n),
      funding_udt_type_script: udt,
      public: false,
    });
    const ready = await until(
      'A ready',
      () => rpc(a, 'list_channels', {}),
      (x) => x.channels[0]?.state.state_name === 'CHANNEL_READY',
    );
    await until(
      'B ready',
      () => rpc(b, 'list_channels', {}),
      (x) => x.channels[0]?.state.state_name === 'CHANNEL_READY',
    );
    const id = ready.channels[0].channel_id as string;
    const db = new Database(path.join(a.dir, 'fiber/store/strand.db'), { readonly: true });
    const first = deserializeChannel(
      (db.prepare('SELECT data FROM channels').get() as { data: string }).data,
    );
    db.close();
    const preimage = `0x${'08'.repeat(32)}`;
    await rpc(a, 'add_tlc', {
      channel_id: id,
      amount: hex(100n),
      payment_hash: ccc.hexFrom(ckbHash(ccc.bytesFrom(preimage))),
      expiry: hex(BigInt(Date.now() + 3_600_000)),
    });
    await until(
      'TLC at B',
      () => rpc(b, 'list_channels', {}),
      (x) => x.channels[0]?.pending_tlcs[0]?.status?.Inbound === 'Committed',
    );
    await rpc(b, 'remove_tlc', { channel_id: id, tlc_id: '0x0', reason: { payment_preimage: preimage } });
    await until(
      'paid',
      () => rpc(a, 'list_channels', {}),
      (x) => x.channels[0]?.remote_balance === hex(100n) && x.channels[0]?.pending_tlcs.length === 0,
    );
    await a.stop();

    const client = createChainClient({ rpcUrl: chain.url });
    const cheat = ccc.Transaction.fromBytes(first.latestCommitmentTx as string);
    cheat.cellDeps = [...scripts.funding_lock.cell_deps, ...scripts.test_udt.cell_deps].map((d: any) =>
      cccA.JsonRpcTransformers.cellDepTo(d),
    );
    const hash = await client.sendTransaction(cheat);
    const committed = (await until(
      'old commitment committed',
      () => client.getTransaction(hash),
      (x) => x?.tx_status.status === 'committed',
    )) as any;
    expect(ccc.numLeFromBytes(ccc.bytesFrom(committed.transaction.outputs_data[0]))).toBe(600n);
    const capacity = BigInt(committed.transaction.outputs[0].capacity);

    const bLock = bInfo.default_funding_lock_script;
    const swept = await until(
      'revocation committed',
      () =>
        client.getCells(
          { script: bLock, script_type: 'lock', script_search_mode: 'exact', filter: { script: udt } },
          'desc',
          50,
        ),
      (x) => x.objects.some((c) => BigInt(c.output.capacity) === capacity),
      60_000,
    );
    const cell = swept.objects.find((c) => BigInt(c.output.capacity) === capacity)!;
    expect(cell.output.type).toEqual(udt);
    const rev = (await client.getTransaction(cell.out_point.tx_hash)) as any;
    expect(rev.transaction.inputs[0].previous_output).toEqual({ tx_hash: hash, index: '0x0' });
    expect(ccc.numLeFromBytes(ccc.bytesFrom(rev.transaction.outputs_data[0]))).toBe(600n);
    expect(rev.transaction.outputs[0].lock).toEqual(bLock);
  }, 180_000);
});
