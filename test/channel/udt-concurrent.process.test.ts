/**
 * Two UDT openings at once from a node whose tokens sit in one cell (real processes): A has 1000
 * tokens (A and B two CKB cells each) and opens two 600-token channels to B back to back. The token cell is promised to the
 * first funding tx; the second opening does not pick it again (its funding tx would conflict with
 * the first and never confirm, the channel stuck until the funding timeout) but fails at once
 * with a clear reason, on both sides.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChainClient } from '../../src/chain/client.ts';
import type { NodeProcess } from '../helpers/node-process.ts';
import {
  connect,
  type DevchainProcess,
  rpc,
  startChannelNode,
  startDevchain,
  testUdtWhitelist,
  until,
} from './process-helpers.ts';

const hex = (v: bigint) => `0x${v.toString(16)}`;
let chain: DevchainProcess;
let a: NodeProcess;
let b: NodeProcess;
let bInfo: any;
let udt: { code_hash: string; hash_type: string; args: string };

beforeAll(async () => {
  chain = await startDevchain([1, 2], 5000, 200, undefined, 1000);
  const client = createChainClient({ rpcUrl: chain.url });
  const t = await testUdtWhitelist(chain.url);
  udt = t.udt;
  const whitelist = t.whitelist;
  a = await startChannelNode(1, chain.url, {}, undefined, { udt_whitelist: whitelist });
  b = await startChannelNode(2, chain.url, {}, undefined, { udt_whitelist: whitelist });
  let aInfo: any;
  ({ aInfo, bInfo } = await connect(a, b));
  // A second plain CKB cell on each side: each opening finds CKB of its own (B contributes its
  // reserve), only A's tokens are short.
  for (const info of [aInfo, bInfo]) {
    const key = {
      script: info.default_funding_lock_script,
      script_type: 'lock',
      script_search_mode: 'exact',
    };
    await client.call('faucet', [info.default_funding_lock_script, hex(1000n * 100_000_000n)]);
    await until(
      'second CKB cell',
      () => client.getCells(key as never, 'asc', 10),
      (x) => x.objects.filter((c) => !c.output.type).length >= 2,
    );
  }
}, 120_000);

afterAll(async () => {
  if (process.env.DEBUG_CH) console.log(a?.output().slice(-4000), '\n-----\n', b?.output().slice(-4000));
  await a?.stop();
  await b?.stop();
  await chain?.stop();
});

describe('concurrent UDT openings', () => {
  it('one gets the token cell and opens; the other fails cleanly instead of conflicting', async () => {
    const open = () =>
      rpc(a, 'open_channel', {
        pubkey: bInfo.pubkey,
        funding_amount: hex(600n),
        funding_udt_type_script: udt,
        public: false,
      });
    await Promise.all([open(), open()]);
    const settled = (x: any) =>
      x.channels.length === 2 &&
      x.channels.every((c: any) => ['CHANNEL_READY', 'CLOSED'].includes(c.state.state_name));
    const done = await until(
      'both openings ended',
      () => rpc(a, 'list_channels', { include_closed: true }),
      settled,
    );
    const states = done.channels.map((c: any) => c.state.state_name).sort();
    expect(states).toEqual(['CHANNEL_READY', 'CLOSED']);
    const failed = done.channels.find((c: any) => c.state.state_name === 'CLOSED');
    expect(failed.state.state_flags).toContain('FUNDING_ABORTED');
    expect(failed.failure_detail).toMatch(/insufficient UDT/);
    const ready = done.channels.find((c: any) => c.state.state_name === 'CHANNEL_READY');
    expect(ready.local_balance).toBe(hex(600n));
    // B sees the same: one channel ready, the other aborted.
    const atB = await until(
      'B agrees',
      () => rpc(b, 'list_channels', { include_closed: true }),
      (x) =>
        x.channels.length === 2 &&
        x.channels.some((c: any) => c.state.state_name === 'CLOSED') &&
        x.channels.some(
          (c: any) => c.channel_id === ready.channel_id && c.state.state_name === 'CHANNEL_READY',
        ),
    );
    expect(atB.channels).toHaveLength(2);
  }, 120_000);
});
