/**
 * `submit_commitment_transaction` (dev) between real processes: the commitment is named by its
 * channel and commitment number, as in the reference. A missing number is invalid params; an
 * unknown channel, a revoked (older) number or a number not reached yet is the reference's
 * "Commitment transaction not found" and changes nothing (the channel is as it was, nothing on
 * chain); the latest commitment's number puts exactly that commitment on chain.
 */
import { ccc } from '@ckb-ccc/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChainClient } from '../../src/chain/client.ts';
import { ckbHash } from '../../src/crypto/hash.ts';
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
const NOT_FOUND = 'Commitment transaction not found';
let chain: DevchainProcess;
let a: NodeProcess;
let b: NodeProcess;

beforeAll(async () => {
  chain = await startDevchain([1, 2], 5000, 200, 10);
  a = await startChannelNode(1, chain.url);
  b = await startChannelNode(2, chain.url, { auto_accept_channel_ckb_funding_amount: Number(250n * CKB) });
  await connect(a, b);
}, 120_000);

afterAll(async () => {
  if (process.env.DEBUG_CH) console.log(a?.output().slice(-3000), '\n----\n', b?.output().slice(-3000));
  await a?.stop();
  await b?.stop();
  await chain?.stop();
});

const channelOf = async (n: NodeProcess) => (await rpc(n, 'list_channels', {})).channels[0];

describe('submit_commitment_transaction', () => {
  it('sends only the latest commitment, named by its number; anything else is not found', async () => {
    const bInfo = await rpc(b, 'node_info', undefined);
    await rpc(a, 'open_channel', { pubkey: bInfo.pubkey, funding_amount: hex(500n * CKB), public: false });
    for (const n of [a, b])
      await until(
        'CHANNEL_READY',
        () => channelOf(n),
        (c) => c?.state.state_name === 'CHANNEL_READY',
      );
    const opened = await channelOf(a);
    const id = opened.channel_id as string;

    // One TLC round: the funding commitment (number 1) is revoked, number 2 is the latest.
    await rpc(a, 'add_tlc', {
      channel_id: id,
      amount: hex(10n * CKB),
      payment_hash: ccc.hexFrom(ckbHash(new Uint8Array(32).fill(0x61))),
      expiry: hex(BigInt(Date.now() + 3_600_000)),
    });
    const before = await until(
      'the TLC committed on both sides',
      async () => [await channelOf(a), await channelOf(b)],
      ([x, y]) =>
        x.pending_tlcs[0]?.status.Outbound === 'Committed' &&
        y.pending_tlcs[0]?.status.Inbound === 'Committed' &&
        x.latest_commitment_transaction_hash !== opened.latest_commitment_transaction_hash,
    ).then(([x]) => x);

    const missing = await a.call('submit_commitment_transaction', [{ channel_id: id }]);
    expect(missing.error?.code).toBe(-32602);
    expect(missing.error?.message).toMatch(/^Invalid params: commitment_number/);
    const bad = [
      { channel_id: id, commitment_number: '0x0' },
      { channel_id: id, commitment_number: '0x1' },
      { channel_id: id, commitment_number: '0x3' },
      { channel_id: `0x${'ab'.repeat(32)}`, commitment_number: '0x2' },
    ];
    for (const params of bad) {
      const r = await a.call('submit_commitment_transaction', [params]);
      expect({ params, r }).toMatchObject({ params, r: { error: { code: -32000, message: NOT_FOUND } } });
    }
    const client = createChainClient({ rpcUrl: chain.url });
    const latest = before.latest_commitment_transaction_hash as string;
    // Nothing changed: the channel is as it was, the commitments are nowhere on chain.
    expect(await channelOf(a)).toEqual(before);
    for (const h of [latest, opened.latest_commitment_transaction_hash])
      expect(await client.getTransaction(h)).toBeNull();

    const sent = await rpc(a, 'submit_commitment_transaction', { channel_id: id, commitment_number: '0x2' });
    expect(sent.tx_hash).toBe(latest);
    const onChain = await until(
      'the commitment committed',
      () => client.getTransaction(latest) as Promise<any>,
      (x) => x?.tx_status?.status === 'committed',
    );
    expect(onChain.transaction.inputs[0].previous_output.tx_hash).toBe(opened.channel_outpoint.slice(0, 66));
  }, 120_000);
});
