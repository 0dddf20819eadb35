/**
 * `rpc.compat: fnn-0.8` through real nodes: node 1 (RPC_COMPAT=fnn-0.8) and node 2 (default)
 * share a ready channel; each writes its own names for the same channel, peer and invoice, and
 * each answer matches the schema its own `rpc.discover` publishes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
import { checkAnswer, newAjv, type OpenRpcDoc } from './openrpc-driver.ts';

let chain: DevchainProcess;
let v08: NodeProcess;
let seed: NodeProcess;

beforeAll(async () => {
  chain = await startDevchain([1, 2]);
  const modules = ['info', 'peer', 'channel', 'invoice', 'payment'];
  const accept = { auto_accept_channel_ckb_funding_amount: Number(250n * CKB) };
  [v08, seed] = await Promise.all([
    startChannelNode(1, chain.url, {}, undefined, {}, modules, { RPC_COMPAT: 'fnn-0.8' }),
    startChannelNode(2, chain.url, accept, undefined, {}, modules),
  ]);
  const { bInfo } = await connect(v08, seed);
  await rpc(v08, 'open_channel', {
    pubkey: bInfo.pubkey,
    funding_amount: `0x${(500n * CKB).toString(16)}`,
    public: false,
  });
  await until(
    'channel ready',
    async () => (await rpc(seed, 'list_channels', {})).channels[0],
    (c) => c?.state.state_name === 'CHANNEL_READY',
  );
  await until(
    'channel ready under fnn-0.8 names',
    async () => (await rpc(v08, 'list_channels', {})).channels[0],
    (c) => c?.state.state_name === 'ChannelReady',
  );
}, 240_000);

afterAll(async () => {
  await Promise.all([v08?.stop(), seed?.stop()]);
  await chain?.stop();
});

/** Calls `method` and checks the answer against the node's own published schema. */
async function published(node: NodeProcess, method: string, params: unknown) {
  const doc = (await rpc(node, 'rpc.discover', undefined)) as OpenRpcDoc;
  const reply = await node.call(method, params === undefined ? [] : [params]);
  const ajv = newAjv();
  const m = doc.methods.find((x) => x.name === method)!;
  expect(
    checkAnswer(doc, m, reply, (s) => ajv.compile(s)),
    method,
  ).toBeUndefined();
  expect(reply.error, method).toBeUndefined();
  return reply.result;
}

describe('rpc.compat', () => {
  it('describes only the enabled modules, rpc.discover included', async () => {
    const doc = (await rpc(seed, 'rpc.discover', undefined)) as OpenRpcDoc;
    const names = doc.methods.map((m) => m.name);
    expect(names).toContain('rpc.discover');
    expect(names).toContain('list_channels');
    expect(names).not.toContain('graph_nodes');
    expect(names).not.toContain('create_watch_channel');
  });

  it("writes fnn v0.8's channel state, flags and counterparty under fnn-0.8, the seed's by default", async () => {
    const [mine] = (await published(v08, 'list_channels', {})).channels;
    expect(mine.state).toEqual({ state_name: 'ChannelReady' });
    expect(mine).not.toHaveProperty('peer_id');
    expect(mine.pubkey).toMatch(/^0[23][0-9a-f]{64}$/);
    const [theirs] = (await published(seed, 'list_channels', {})).channels;
    expect(theirs.state).toEqual({ state_name: 'CHANNEL_READY', state_flags: [] });
    expect(theirs.peer_id).toMatch(/^Qm/);
    expect(theirs.channel_id).toBe(mine.channel_id);
  });

  it('lists peers without peer_id and invoices with snake_case attributes under fnn-0.8', async () => {
    const peers = (await published(v08, 'list_peers', undefined)).peers;
    expect(Object.keys(peers[0]).sort()).toEqual(['address', 'pubkey']);
    expect(Object.keys((await published(seed, 'list_peers', undefined)).peers[0]).sort()).toEqual([
      'address',
      'peer_id',
      'pubkey',
    ]);
    const params = { amount: '0x64', currency: 'Fibd', description: 'tea', expiry: '0xe10' };
    const attrs = (r: { invoice: { data: { attrs: object[] } } }) =>
      r.invoice.data.attrs.flatMap((a) => Object.keys(a)).sort();
    expect(attrs(await published(v08, 'new_invoice', params))).toEqual(
      expect.arrayContaining(['description', 'expiry_time']),
    );
    expect(attrs(await published(seed, 'new_invoice', params))).toEqual(
      expect.arrayContaining(['Description', 'ExpiryTime']),
    );
  });

  it('answers payments as their published schemas say, on both nodes', async () => {
    const made = await published(seed, 'new_invoice', { amount: '0x2faf080', currency: 'Fibd' });
    const sent = await published(v08, 'send_payment', { invoice: made.invoice_address });
    let done: { status: string };
    do {
      await new Promise((res) => setTimeout(res, 300));
      done = await published(v08, 'get_payment', { payment_hash: sent.payment_hash });
    } while (done.status !== 'Success' && done.status !== 'Failed');
    expect(done.status).toBe('Success');
    const page = await published(v08, 'list_payments', {});
    expect(page.payments.map((p: { payment_hash: string }) => p.payment_hash)).toContain(sent.payment_hash);
    expect((await published(seed, 'get_invoice', { payment_hash: sent.payment_hash })).status).toBe('Paid');
    const [mine] = (await published(v08, 'list_channels', {})).channels;
    expect(BigInt(mine.offered_tlc_balance)).toBe(0n);
  }, 120_000);

  it('writes the closed state as one flag string after a cooperative close', async () => {
    const [mine] = (await rpc(v08, 'list_channels', {})).channels;
    await rpc(v08, 'shutdown_channel', { channel_id: mine.channel_id });
    const closed = async (node: NodeProcess) => {
      for (;;) {
        const r = await published(node, 'list_channels', { include_closed: true });
        const s = r.channels[0].state;
        if (s.state_name === 'Closed' || s.state_name === 'CLOSED') return s;
        await new Promise((res) => setTimeout(res, 300));
      }
    };
    expect(await closed(v08)).toEqual({ state_name: 'Closed', state_flags: 'COOPERATIVE' });
    expect(await closed(seed)).toEqual({ state_name: 'CLOSED', state_flags: ['COOPERATIVE'] });
  }, 120_000);
});
