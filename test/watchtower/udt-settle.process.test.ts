/**
 * Force close of a UDT channel with a pending TLC (real processes): A funds 600 tokens, pays B 100,
 * offers B a 50-token TLC, then force-closes. B's watchtower, told the preimage, claims the TLC by
 * preimage and then B's share; A's takes A's share after the delay. Each settlement keeps the
 * tokens in UDT cells (the continuation with what is left, ours with what we take): checked on
 * chain, token by token, and both channels stop waiting for settlement.
 */
import { ccc } from '@ckb-ccc/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChainClient, createChainClient } from '../../src/chain/client.ts';
import { ckbHash } from '../../src/crypto/hash.ts';
import {
  connect,
  type DevchainProcess,
  rpc,
  startChannelNode,
  startDevchain,
  testUdtWhitelist,
  until,
} from '../channel/process-helpers.ts';
import type { NodeProcess } from '../helpers/node-process.ts';
import { addTlc, hex, openReady, payByTlc } from './breach-helpers.ts';
import { forceCloseOnChain, kinds, settlementsOnChain } from './settle-helpers.ts';

let chain: DevchainProcess;
let a: NodeProcess;
let b: NodeProcess;
let aInfo: any;
let bInfo: any;
let udt: { code_hash: string; hash_type: string; args: string };

beforeAll(async () => {
  chain = await startDevchain([1, 2], 5000, 200, 10, 1000);
  const t = await testUdtWhitelist(chain.url);
  udt = t.udt;
  const whitelist = t.whitelist;
  const fiber = { watchtower_check_interval_seconds: 1 };
  const modules = ['info', 'peer', 'channel', 'dev', 'watchtower'];
  a = await startChannelNode(1, chain.url, fiber, undefined, { udt_whitelist: whitelist }, modules);
  b = await startChannelNode(2, chain.url, fiber, undefined, { udt_whitelist: whitelist }, modules);
  ({ aInfo, bInfo } = await connect(a, b));
}, 120_000);

afterAll(async () => {
  if (process.env.DEBUG_WT) console.log(a?.output().slice(-5000), b?.output().slice(-5000));
  await a?.stop();
  await b?.stop();
  await chain?.stop();
});

/** Test tokens in the live cells of `lock`. */
async function tokens(client: ChainClient, lock: unknown): Promise<bigint> {
  const r = await client.getCells(
    { script: lock, script_type: 'lock', script_search_mode: 'exact', filter: { script: udt } } as never,
    'asc',
    100,
  );
  return r.objects.reduce(
    (s, c) => s + ccc.numLeFromBytes(ccc.bytesFrom(c.output_data ?? '0x').slice(0, 16)),
    0n,
  );
}

describe('settlement of a UDT channel after a force close', () => {
  it('the TLC goes to B by preimage, each side gets its tokens, none is lost', async () => {
    const id = await openReady(a, b, {
      pubkey: bInfo.pubkey,
      funding_amount: hex(600n),
      funding_udt_type_script: udt,
      public: false,
    });
    await payByTlc(a, b, id, 100n, '08');
    const preimage = `0x${'55'.repeat(32)}`;
    const paymentHash = ccc.hexFrom(ckbHash(ccc.bytesFrom(preimage)));
    await addTlc(a, {
      channel_id: id,
      amount: hex(50n),
      payment_hash: paymentHash,
      expiry: hex(BigInt(Date.now() + 3_600_000)),
    });
    await until(
      'TLC committed on both sides',
      async () => [await rpc(a, 'list_channels', {}), await rpc(b, 'list_channels', {})],
      ([x, y]) =>
        y.channels[0]?.pending_tlcs[0]?.status?.Inbound === 'Committed' &&
        x.channels[0]?.pending_tlcs[0]?.status?.Outbound === 'Committed',
    );
    expect(await rpc(b, 'create_preimage', { payment_hash: paymentHash, preimage })).toBeNull();

    const client = createChainClient({ rpcUrl: chain.url });
    const aLock = aInfo.default_funding_lock_script;
    const bLock = bInfo.default_funding_lock_script;
    const [aBefore, bBefore] = [await tokens(client, aLock), await tokens(client, bLock)];
    const { search } = await forceCloseOnChain(chain.url, a, id);
    const settled = await settlementsOnChain(chain.url, search);
    expect(kinds(settled)).toEqual([0, 0xfe, 0xff]);
    expect(settled.find((x) => x.kind === 0)?.preimage).toBe(preimage);
    for (const { tx } of settled) {
      const outs = tx.transaction.outputs as any[];
      const data = (tx.transaction.outputs_data as string[]).map((d) => ccc.bytesFrom(d));
      // Every output with token data is a UDT cell: nothing leaves the type behind.
      outs.forEach((o, i) => {
        if ((data[i] as Uint8Array).length >= 16) expect(o.type).toEqual(udt);
      });
    }
    // B: its 100 and the 50 of the TLC; A: the rest of its 600. Not a token burnt.
    expect((await tokens(client, bLock)) - bBefore).toBe(150n);
    expect((await tokens(client, aLock)) - aBefore).toBe(450n);
    // Both channels see their share out.
    for (const n of [a, b])
      await until(
        'settlement seen by the channel',
        () => rpc(n, 'list_channels', { include_closed: true }),
        (x) =>
          x.channels[0]?.state.state_name === 'CLOSED' &&
          !x.channels[0].state.state_flags.includes('WAITING_ONCHAIN_SETTLEMENT'),
      );
  }, 240_000);
});
