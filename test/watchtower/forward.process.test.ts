import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChainClient } from '../../src/chain/client.ts';
import {
  CKB,
  connect,
  type DevchainProcess,
  payHoldInvoice,
  rpc,
  startChannelNode,
  startDevchain,
  until,
} from '../channel/process-helpers.ts';
import type { NodeProcess } from '../helpers/node-process.ts';
import { hex } from './breach-helpers.ts';
import { forceCloseOnChain, kinds, openNewChannel, settlementsOnChain } from './settle-helpers.ts';

let chain: DevchainProcess;
let a: NodeProcess;
let b: NodeProcess;
let c: NodeProcess;
let ab: string;

const FIBER = { watchtower_check_interval_seconds: 1 };
const MODULES = ['info', 'peer', 'channel', 'dev', 'graph', 'payment', 'invoice', 'watchtower'];
const startB = (dir?: string) =>
  startChannelNode(
    2,
    chain.url,
    { ...FIBER, auto_accept_channel_ckb_funding_amount: Number(250n * CKB) },
    dir,
    {},
    MODULES,
  );

beforeAll(async () => {
  chain = await startDevchain([1, 2, 3], 5000, 200, 10);
  a = await startChannelNode(1, chain.url, FIBER, undefined, {}, MODULES);
  b = await startB();
  c = await startChannelNode(
    3,
    chain.url,
    { ...FIBER, auto_accept_channel_ckb_funding_amount: Number(250n * CKB) },
    undefined,
    {},
    MODULES,
  );
  const { bInfo } = await connect(a, b);
  await connect(b, c);
  ab = await openNewChannel(a, b, { pubkey: bInfo.pubkey, funding_amount: hex(1000n * CKB), public: true });
}, 180_000);

afterAll(async () => {
  if (process.env.DEBUG_WT)
    console.log(
      a?.output().slice(-4000),
      '\n---B\n',
      b?.output().slice(-8000),
      '\n---C\n',
      c?.output().slice(-4000),
    );
  await a?.stop();
  await b?.stop();
  await c?.stop();
  await chain?.stop();
});

const channelAt = async (n: NodeProcess, id: string) =>
  (await rpc(n, 'list_channels', {})).channels.find((x: any) => x.channel_id === id);

/** B opens a new public channel to C; its id once A's graph routes over it. */
async function openBC(): Promise<string> {
  const cInfo = await rpc(c, 'node_info', undefined);
  const id = await openNewChannel(b, c, {
    pubkey: cInfo.pubkey,
    funding_amount: hex(500n * CKB),
    public: true,
  });
  const outpoint = (await channelAt(b, id)).channel_outpoint as string;
  await until(
    "B–C in A's graph",
    () => rpc(a, 'graph_channels', {}),
    (g) => g.channels.some((x: any) => x.channel_outpoint === outpoint),
  );
  return id;
}

/**
 * A pays a 100-CKB hold invoice of C through B; resolves once C holds the TLC. Returns the
 * payment hash, the preimage, and B's balance with A before.
 */
async function holdPayment(fill: number) {
  const bBefore = BigInt((await channelAt(b, ab)).local_balance);
  const { preimage, paymentHash } = await payHoldInvoice(a, c, 100n * CKB, new Uint8Array(32).fill(fill));
  return { preimage, paymentHash, bBefore };
}

/** A's payment once it ended: Success is expected. */
async function paymentSucceeded(paymentHash: string) {
  const payment = await until(
    "A's payment to end",
    () => rpc(a, 'get_payment', { payment_hash: paymentHash }),
    (p) => p.status === 'Success' || p.status === 'Failed',
    120_000,
  );
  expect(payment.status).toBe('Success');
  return payment;
}

/** A's payment ends Success, and B's balance with A grew by the amount and the fee A paid. */
async function forwarderCollected(paymentHash: string, bBefore: bigint) {
  const payment = await paymentSucceeded(paymentHash);
  const fee = BigInt(payment.fee);
  expect(fee).toBeGreaterThan(0n);
  const [atA, atB] = await until(
    'the upstream TLC removed on both sides',
    async () => [await channelAt(a, ab), await channelAt(b, ab)],
    (xs) => xs.every((x) => x.pending_tlcs.length === 0),
  );
  expect(atB.state.state_name).toBe('CHANNEL_READY');
  expect(BigInt(atB.local_balance)).toBe(bBefore + 100n * CKB + fee);
  expect(atA.remote_balance).toBe(atB.local_balance);
}

/** Until the chain is two commitment delays (1 epoch of 10 blocks each) further on. */
async function pastTheDelay() {
  const client = createChainClient({ rpcUrl: chain.url });
  const tip = async () => BigInt(await client.call<string>('get_tip_block_number'));
  const from = await tip();
  await until('two delays of blocks', tip, (n) => n >= from + 20n);
}

/** The closed channel stops waiting for its on-chain settlement at `n`: its share is out. */
const settledAt = (n: NodeProcess, id: string) =>
  until(
    'the channel settled',
    async () =>
      (await rpc(n, 'list_channels', { include_closed: true })).channels.find(
        (x: any) => x.channel_id === id,
      ),
    (x) => x?.state.state_name === 'CLOSED' && !x.state.state_flags.includes('WAITING_ONCHAIN_SETTLEMENT'),
  );

describe('a forwarder whose next hop claims on chain', () => {
  it('fulfils the upstream TLC with the preimage read from the claim', async () => {
    const bc = await openBC();
    const { preimage, paymentHash, bBefore } = await holdPayment(0x51);
    const { search } = await forceCloseOnChain(chain.url, c, bc);
    await pastTheDelay();
    await rpc(c, 'settle_invoice', { payment_hash: paymentHash, payment_preimage: preimage });
    const settled = await settlementsOnChain(chain.url, search);
    // No share went out while the TLC was pending (either side could take it with the second).
    expect(settled[0]?.kind).toBe(0);
    expect(settled.filter((s) => s.kind === 0).map((s) => s.preimage)).toEqual([preimage]);
    await forwarderCollected(paymentHash, bBefore);
    // The channel layers left the shares of a commitment with a TLC to the watchtowers.
    await settledAt(b, bc);
    await settledAt(c, bc);
  }, 300_000);

  it('collects after a restart when the claim happened while it was offline', async () => {
    const bc = await openBC();
    const { preimage, paymentHash, bBefore } = await holdPayment(0x52);
    await b.stop();
    const { search } = await forceCloseOnChain(chain.url, c, bc);
    await rpc(c, 'settle_invoice', { payment_hash: paymentHash, payment_preimage: preimage });
    const client = createChainClient({ rpcUrl: chain.url });
    await until(
      "C's claim on chain",
      async () => (await client.call<any>('get_transactions', [search, 'asc', '0x64'])).objects,
      (rows: any[]) => rows.some((r) => r.io_type === 'input'),
      120_000,
    );
    b = await startB(b.dir);
    await connect(a, b);
    await forwarderCollected(paymentHash, bBefore);
  }, 300_000);

  it('claims the upstream TLC on chain when the upstream channel is closed too', async () => {
    const bc = await openBC();
    const { preimage, paymentHash } = await holdPayment(0x53);
    const upstream = await forceCloseOnChain(chain.url, a, ab);
    await forceCloseOnChain(chain.url, c, bc);
    await rpc(c, 'settle_invoice', { payment_hash: paymentHash, payment_preimage: preimage });
    // On A's commitment: B's claim of the TLC with the preimage, then each side's share.
    const settled = await settlementsOnChain(chain.url, upstream.search);
    const claims = settled.filter((s) => s.kind === 0);
    expect(claims.map((s) => s.preimage)).toEqual([preimage]);
    expect(kinds(settled)).toEqual([0, 0xfe, 0xff]);
    // The TLC (amount + fee) went to B's wallet, less the claim's fee.
    const payment = await paymentSucceeded(paymentHash);
    const bLock = (await rpc(b, 'node_info', undefined)).default_funding_lock_script;
    const toB = claims[0]!.tx.transaction.outputs
      .filter((o: any) => o.lock.args === bLock.args && o.lock.code_hash === bLock.code_hash)
      .reduce((n: bigint, o: any) => n + BigInt(o.capacity), 0n);
    const inputs = 100n * CKB + BigInt(payment.fee);
    expect(toB).toBeGreaterThan(inputs - CKB / 100n);
  }, 300_000);
});
