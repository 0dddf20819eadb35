/**
 * Force close while the peer is offline (real processes): the latest commitment goes on chain,
 * and once the commitment delay (1 epoch of 10 blocks here) has passed, the closer's balance +
 * reserve (minus the settlement fee) lands at its shutdown script; the peer's share stays under
 * the commitment lock for the peer to take.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChainClient } from '../../src/chain/client.ts';
import type { NodeProcess } from '../helpers/node-process.ts';
import {
  CKB,
  connect,
  type DevchainProcess,
  rpc,
  startChannelNode,
  startDevchain,
  until,
} from './process-helpers.ts';

const hex = (v: bigint) => `0x${v.toString(16)}`;
let chain: DevchainProcess;
let a: NodeProcess;
let b: NodeProcess;
let aInfo: any;
let bInfo: any;

beforeAll(async () => {
  chain = await startDevchain([1, 2], 5000, 200, 10);
  a = await startChannelNode(1, chain.url);
  b = await startChannelNode(2, chain.url, { auto_accept_channel_ckb_funding_amount: Number(250n * CKB) });
  ({ aInfo, bInfo } = await connect(a, b));
}, 120_000);

afterAll(async () => {
  if (process.env.DEBUG_CH) console.log(a?.output().slice(-3000), '\n----\n', b?.output().slice(-3000));
  await a?.stop();
  await b?.stop();
  await chain?.stop();
});

describe('force close', () => {
  it('with the peer offline: commitment on chain, settlement after the delay, funds where they belong', async () => {
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
    const commitmentHash = ready.channels[0].latest_commitment_transaction_hash as string;
    const bDir = b.dir;
    await b.stop();
    const both = await a.call('shutdown_channel', [{ channel_id: id, force: true, fee_rate: '0x3e8' }]);
    expect(both.error?.message).toBe('close_script and fee_rate should not be set when force is true');
    await rpc(a, 'shutdown_channel', { channel_id: id, force: true });
    const closed = await until(
      'settled',
      () => rpc(a, 'list_channels', { include_closed: true }),
      (x) =>
        x.channels[0]?.state.state_name === 'CLOSED' &&
        !x.channels[0].state.state_flags.includes('WAITING_ONCHAIN_SETTLEMENT'),
      60_000,
    );
    expect(closed.channels[0].state.state_flags).toEqual(['UNCOOPERATIVE_LOCAL']);
    expect(closed.channels[0].shutdown_transaction_hash).toBe(commitmentHash);
    // The commitment is on chain; its cell was spent by A's settlement: 500 CKB − 1000 shannons
    // to A's lock, and B's 250 CKB − the commitment fee left under the commitment lock.
    const client = createChainClient({ rpcUrl: chain.url });
    const commitment = (await client.getTransaction(commitmentHash)) as any;
    expect(commitment.tx_status.status).toBe('committed');
    const lockKey = {
      script: aInfo.default_funding_lock_script,
      script_type: 'lock' as const,
      script_search_mode: 'exact' as const,
    };
    const cells = await until(
      'settlement committed',
      () => client.getCells(lockKey, 'desc', 100),
      (x) => x.objects.some((c) => BigInt(c.output.capacity) === 500n * CKB - 1000n),
    );
    const settlement = cells.objects.find((c) => BigInt(c.output.capacity) === 500n * CKB - 1000n);
    expect(settlement).toBeDefined();
    const tx = (await client.getTransaction(settlement!.out_point.tx_hash)) as any;
    expect(tx.transaction.inputs[0].previous_output.tx_hash).toBe(commitmentHash);
    const rest = tx.transaction.outputs[0];
    const fee = 750n * CKB - BigInt(commitment.transaction.outputs[0].capacity);
    expect(BigInt(rest.capacity)).toBe(250n * CKB - fee);
    // B comes back: it notices the force close and takes its share from what A's settlement left.
    b = await startChannelNode(
      2,
      chain.url,
      { auto_accept_channel_ckb_funding_amount: Number(250n * CKB) },
      bDir,
    );
    const closedB = await until(
      'B settled',
      () => rpc(b, 'list_channels', { include_closed: true }),
      (x) =>
        x.channels[0]?.state.state_name === 'CLOSED' &&
        !x.channels[0].state.state_flags.includes('WAITING_ONCHAIN_SETTLEMENT'),
      60_000,
    );
    expect(closedB.channels[0].state.state_flags).toEqual(['UNCOOPERATIVE_REMOTE']);
    const bKey = {
      script: bInfo.default_funding_lock_script,
      script_type: 'lock' as const,
      script_search_mode: 'exact' as const,
    };
    await until(
      "B's share on chain",
      () => client.getCells(bKey, 'desc', 100),
      (x) => x.objects.some((c) => BigInt(c.output.capacity) === 250n * CKB - fee - 1000n),
    );
    expect(await a.call('shutdown_channel', [{ channel_id: id, force: true }])).toMatchObject({
      error: { message: 'Messaging failed because channel is closed' },
    });
  }, 120_000);

  it('the holder back after the peer settled first: it takes its share from what the peer left', async () => {
    await connect(a, b);
    await rpc(a, 'open_channel', { pubkey: bInfo.pubkey, funding_amount: hex(500n * CKB), public: false });
    const ready = await until(
      'ready',
      () => rpc(a, 'list_channels', {}),
      (x) => x.channels.some((c: any) => c.state.state_name === 'CHANNEL_READY'),
    );
    const id = ready.channels.find((c: any) => c.state.state_name === 'CHANNEL_READY').channel_id as string;
    await until(
      'B ready',
      () => rpc(b, 'list_channels', {}),
      (x) => x.channels.some((c: any) => c.channel_id === id && c.state.state_name === 'CHANNEL_READY'),
    );
    const commitmentHash = (await rpc(a, 'list_channels', {})).channels.find((c: any) => c.channel_id === id)
      .latest_commitment_transaction_hash as string;
    await rpc(a, 'shutdown_channel', { channel_id: id, force: true });
    const client = createChainClient({ rpcUrl: chain.url });
    await until(
      'commitment committed',
      () => client.getTransaction(commitmentHash),
      (x: any) => x?.tx_status.status === 'committed',
    );
    // A goes away before the delay passes; B settles its share first.
    const aDir = a.dir;
    await a.stop();
    await until(
      'B settled first',
      () => rpc(b, 'list_channels', { include_closed: true }),
      (x) =>
        x.channels.some(
          (c: any) =>
            c.channel_id === id &&
            c.state.state_name === 'CLOSED' &&
            !c.state.state_flags.includes('WAITING_ONCHAIN_SETTLEMENT'),
        ),
      60_000,
    );
    const spent = await until(
      'the commitment cell spent by B',
      () => client.call<any>('get_live_cell', [{ tx_hash: commitmentHash, index: '0x0' }, false]),
      (x) => x.status !== 'live',
    );
    expect(spent.status).not.toBe('live');
    a = await startChannelNode(1, chain.url, {}, aDir);
    const closed = await until(
      'A settled from the continuation',
      () => rpc(a, 'list_channels', { include_closed: true }),
      (x) =>
        x.channels.some(
          (c: any) =>
            c.channel_id === id &&
            c.state.state_name === 'CLOSED' &&
            !c.state.state_flags.includes('WAITING_ONCHAIN_SETTLEMENT'),
        ),
      60_000,
    );
    expect(closed.channels.find((c: any) => c.channel_id === id).state.state_flags).toEqual([
      'UNCOOPERATIVE_LOCAL',
    ]);
    const aKey = {
      script: aInfo.default_funding_lock_script,
      script_type: 'lock' as const,
      script_search_mode: 'exact' as const,
    };
    // A's balance + reserve less the settlement fee.
    await until(
      "A's share on chain",
      () => client.getCells(aKey, 'desc', 100),
      (x) => x.objects.some((c) => BigInt(c.output.capacity) === 500n * CKB - 1000n),
    );
  }, 180_000);
});
