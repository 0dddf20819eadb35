/**
 * A public channel between two real nodes: once ready, the AnnouncementSignatures exchange
 * produces a ChannelAnnouncement that the graph accepts (on-chain funding check included), so
 * the channel shows in `graph_channels` on both nodes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
let bInfo: any;

beforeAll(async () => {
  chain = await startDevchain([1, 2]);
  a = await startChannelNode(1, chain.url);
  b = await startChannelNode(2, chain.url, { auto_accept_channel_ckb_funding_amount: Number(250n * CKB) });
  ({ bInfo } = await connect(a, b));
}, 120_000);

afterAll(async () => {
  if (process.env.DEBUG_CH) console.log(a?.output().slice(-3000), '\n----\n', b?.output().slice(-3000));
  await a?.stop();
  await b?.stop();
  await chain?.stop();
});

describe('a public channel', () => {
  it('is announced into the graph of both nodes', async () => {
    await rpc(a, 'open_channel', { pubkey: bInfo.pubkey, funding_amount: hex(500n * CKB) });
    const ready = await until(
      'ready',
      () => rpc(a, 'list_channels', {}),
      (x) => x.channels[0]?.state.state_name === 'CHANNEL_READY',
    );
    expect(ready.channels[0].is_public).toBe(true);
    const outpoint = ready.channels[0].channel_outpoint;
    for (const node of [a, b]) {
      const g = await until(
        'announced',
        () => rpc(node, 'graph_channels', {}),
        (x) => x.channels.some((c: any) => c.channel_outpoint === outpoint),
      );
      const c = g.channels.find((x: any) => x.channel_outpoint === outpoint);
      expect(BigInt(c.capacity)).toBe(626n * CKB);
    }
  }, 90_000);
});
