/**
 * A lost broadcast is sent again (real processes, a dev chain that mines only when the test says):
 * the funding tx, a cooperative close and a force close each leave the node, the chain's pool is
 * cleared (CKB's `clear_tx_pool`, as a chain node that restarted or dropped them), and the node
 * puts the same tx back in the pool by itself; mined, the channel moves on as usual.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChainClient, createChainClient } from '../../src/chain/client.ts';
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
let client: ChainClient;
let a: NodeProcess;
let b: NodeProcess;
let bInfo: any;
let mining = true;
let miner: NodeJS.Timeout;

beforeAll(async () => {
  chain = await startDevchain([1, 2], 5000, 0, 10); // blocks only on generate_block
  client = createChainClient({ rpcUrl: chain.url });
  miner = setInterval(() => {
    if (mining) client.call('generate_block').catch(() => {});
  }, 200);
  a = await startChannelNode(1, chain.url);
  b = await startChannelNode(2, chain.url, { auto_accept_channel_ckb_funding_amount: Number(250n * CKB) });
  ({ bInfo } = await connect(a, b));
}, 120_000);

afterAll(async () => {
  clearInterval(miner);
  if (process.env.DEBUG_CH) console.log(a?.output().slice(-3000), '\n----\n', b?.output().slice(-3000));
  await a?.stop();
  await b?.stop();
  await chain?.stop();
});

const status = async (hash: string) => (await client.getTransaction(hash))?.tx_status.status ?? 'unknown';

/** `hash` reaches the pool, the pool is cleared, and a node sends it back with no block in between. */
async function loseAndSeeResent(hash: string) {
  await until(
    'the tx in the pool',
    () => status(hash),
    (s) => s === 'pending',
  );
  await client.call('clear_tx_pool');
  expect(await status(hash)).toBe('unknown');
  await until(
    'the tx sent again',
    () => status(hash),
    (s) => s === 'pending',
    30_000,
  );
}

const channelOf = async (n: NodeProcess, id?: string) =>
  (await rpc(n, 'list_channels', { include_closed: true })).channels.find((c: any) =>
    id ? c.channel_id === id : c.state.state_name !== 'CLOSED',
  );

async function openChannel(): Promise<string> {
  mining = false;
  await rpc(a, 'open_channel', { pubkey: bInfo.pubkey, funding_amount: hex(500n * CKB), public: false });
  const signed = await until(
    'the funding signed',
    () => channelOf(a),
    (c) => c?.state.state_name === 'AWAITING_CHANNEL_READY',
  );
  await loseAndSeeResent(signed.channel_outpoint.slice(0, 66));
  mining = true;
  const ready = await until(
    'ready',
    () => channelOf(a),
    (c) => c?.state.state_name === 'CHANNEL_READY',
  );
  await until(
    'B ready',
    () => channelOf(b, ready.channel_id),
    (c) => c?.state.state_name === 'CHANNEL_READY',
  );
  return ready.channel_id;
}

/** Closes `id` (`force` or not) with the chain not mining; the close tx is lost once and resent. */
async function closeLosingTheTx(id: string, force: boolean) {
  mining = false;
  await rpc(a, 'shutdown_channel', { channel_id: id, force });
  const closing = await until(
    'the close out',
    () => channelOf(a, id),
    (c) => !!c?.shutdown_transaction_hash,
  );
  await loseAndSeeResent(closing.shutdown_transaction_hash);
  mining = true;
  return until(
    'closed',
    () => channelOf(a, id),
    (c) => c?.state.state_name === 'CLOSED',
  );
}

describe('a broadcast the chain lost', () => {
  it('is sent again: the funding tx, then a cooperative close', async () => {
    const closed = await closeLosingTheTx(await openChannel(), false);
    expect(closed.state.state_flags).toEqual(['COOPERATIVE']);
  }, 120_000);

  it('is sent again: a force close', async () => {
    const closed = await closeLosingTheTx(await openChannel(), true);
    expect(closed.state.state_flags).toContain('UNCOOPERATIVE_LOCAL');
  }, 120_000);
});
