/**
 * Trampoline routing end to end: a devnet of three node processes, alice→bob public and two
 * bob→carol private channels (500 CKB each), driven only over JSON-RPC. Alice's graph never learns
 * bob's private channels, so she has no route to carol of her own; through the trampoline bob
 * (`trampoline_hops`), who knows his own channels, the payment succeeds. Alice pays the amount and
 * the budget, bob keeps the budget (his route to carol is his own channel), carol receives the
 * amount. 600 CKB is more than one bob→carol channel carries: without MPP bob has no route and
 * alice's payment ends Failed with the reference's TemporaryNodeFailure; with an MPP invoice bob
 * splits his own payment to carol and it succeeds.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DevnetDescription, type RunningDevnet, startDevnet } from '../../src/devnet/devnet.ts';
import type { RpcClient } from '../../src/rpc/client.ts';
import { tempDir } from '../helpers/node-process.ts';
import { devnetBasePort } from '../helpers/ports.ts';
import { big, CKB, hex, nodeClient, until } from './helpers.ts';

let net: RunningDevnet;
let desc: DevnetDescription;
let alice: RpcClient;
let bob: RpcClient;
let carol: RpcClient;

async function localSum(client: RpcClient): Promise<bigint> {
  const { channels } = await client.call<{ channels: { local_balance: string }[] }>('list_channels', {});
  return channels.reduce((a, c) => a + big(c.local_balance), 0n);
}

beforeAll(async () => {
  net = await startDevnet({
    dir: path.join(tempDir('strand-trampoline-'), 'net'),
    nodes: 3,
    blockIntervalMs: 200,
    basePort: devnetBasePort(),
    topology: {
      peers: [
        ['alice', 'bob'],
        ['bob', 'carol'],
      ],
      channels: [
        { from: 'alice', to: 'bob', funding: 1500, udt: false, public: true },
        { from: 'bob', to: 'carol', funding: 500, udt: false, public: false },
      ],
    },
    reset: true,
    log: () => {},
  });
  desc = net.description;
  [alice, bob, carol] = desc.nodes.map((n) => nodeClient(n.rpc_url)) as [RpcClient, RpcClient, RpcClient];
  // The devnet opens one channel per pair: bob's second channel to carol.
  const carolInfo = desc.nodes[2]!;
  await bob.call('open_channel', {
    peer_id: carolInfo.peer_id,
    pubkey: carolInfo.pubkey,
    funding_amount: hex(500n * CKB),
    public: false,
  });
  await until(
    'two bob–carol channels ready',
    async () => {
      const { channels } = await bob.call<{ channels: { state: { state_name: string } }[] }>(
        'list_channels',
        {
          peer_id: carolInfo.peer_id,
        },
      );
      return channels.filter((c) => c.state.state_name === 'CHANNEL_READY').length === 2 ? true : undefined;
    },
    120_000,
  );
}, 300_000);

afterAll(async () => {
  await net?.stop();
}, 60_000);

/** Alice's send_payment through bob, retried while her graph lacks bob (right after start). */
async function payThroughBob(params: object): Promise<{ routers: { nodes: { pubkey: string }[] }[] }> {
  return until('a route to bob', async () => {
    try {
      return await alice.call('send_payment', { ...params, trampoline_hops: [desc.nodes[1]!.pubkey] });
    } catch (e) {
      if (/Failed to build route/.test((e as Error).message)) return undefined;
      throw e;
    }
  });
}

/** Waits for alice's payment to end, and returns it. */
function ended(hash: string) {
  return until('the payment to end', async () => {
    const p = await alice.call('get_payment', { payment_hash: hash });
    return p.status === 'Success' || p.status === 'Failed' ? p : undefined;
  });
}

describe('a payment through a trampoline on a devnet', { timeout: 180_000 }, () => {
  it('reaches carol, whom alice has no route to, through bob', async () => {
    const amount = 10n * CKB;
    const budget = 5_000_000n;
    const bobKey = desc.nodes[1]!.pubkey;
    const inv = await carol.call('new_invoice', {
      amount: hex(amount),
      currency: 'Fibd',
      allow_trampoline_routing: true,
    });
    expect(inv.invoice.data.attrs).toEqual(
      expect.arrayContaining([{ Feature: ['TRAMPOLINE_ROUTING_OPTIONAL'] }]),
    );
    const hash = inv.invoice.data.payment_hash;
    await expect(alice.call('send_payment', { invoice: inv.invoice_address, dry_run: true })).rejects.toThrow(
      /Failed to build route/,
    );
    await expect(
      alice.call('send_payment', { invoice: inv.invoice_address, trampoline_hops: [bobKey] }),
    ).rejects.toThrow('max_fee_amount must be set when trampoline_hops is provided');

    const before = { alice: await localSum(alice), bob: await localSum(bob), carol: await localSum(carol) };
    // Right after the channels are ready alice's graph may lack bob: retry while no route.
    const sent = await until<{ routers: { nodes: { pubkey: string }[] }[] }>('a route to bob', async () => {
      try {
        return await alice.call('send_payment', {
          invoice: inv.invoice_address,
          trampoline_hops: [bobKey],
          max_fee_amount: hex(budget),
        });
      } catch (e) {
        if (/Failed to build route/.test((e as Error).message)) return undefined;
        throw e;
      }
    });
    expect(sent.routers[0]!.nodes.map((n) => n.pubkey)).toEqual([desc.nodes[0]!.pubkey, bobKey]);
    const done = await until('the payment', async () => {
      const p = await alice.call('get_payment', { payment_hash: hash });
      if (p.status === 'Failed') throw new Error(`payment failed: ${p.failed_error}`);
      return p.status === 'Success' ? p : undefined;
    });
    expect(big(done.fee)).toBe(budget);
    expect((await carol.call('get_invoice', { payment_hash: hash })).status).toBe('Paid');
    // Bob's own payment to carol, for the same hash.
    expect((await bob.call('get_payment', { payment_hash: hash })).status).toBe('Success');
    await until('balances to settle', async () => {
      const now = { alice: await localSum(alice), bob: await localSum(bob), carol: await localSum(carol) };
      return now.alice === before.alice - amount - budget &&
        now.bob === before.bob + budget &&
        now.carol === before.carol + amount
        ? true
        : undefined;
    });
  });

  it("fails, with the reference's TemporaryNodeFailure, when bob has no route to carol for the amount", async () => {
    const amount = 600n * CKB;
    const budget = CKB;
    const inv = await carol.call('new_invoice', {
      amount: hex(amount),
      currency: 'Fibd',
      allow_trampoline_routing: true,
    });
    const hash = inv.invoice.data.payment_hash;
    const before = { alice: await localSum(alice), carol: await localSum(carol) };
    await payThroughBob({ invoice: inv.invoice_address, max_fee_amount: hex(budget) });
    const done = await ended(hash);
    expect(done.status).toBe('Failed');
    // Bob's own payment found no route (no channel of his carries 600 CKB, and the invoice does
    // not allow parts): on record at bob, passed to alice as the code naming no node.
    expect(done.failed_error).toBe('TemporaryNodeFailure');
    const own = await bob.call('get_payment', { payment_hash: hash });
    expect(own.status).toBe('Failed');
    expect(own.failed_error).toMatch(/^Send payment error: Failed to build route/);
    expect((await carol.call('get_invoice', { payment_hash: hash })).status).toBe('Open');
    await until('alice to be refunded', async () =>
      (await localSum(alice)) === before.alice ? true : undefined,
    );
    expect(await localSum(carol)).toBe(before.carol);
  });

  it('pays an MPP invoice through bob, who splits his payment to carol over both channels', async () => {
    const amount = 600n * CKB;
    const budget = CKB;
    const inv = await carol.call('new_invoice', {
      amount: hex(amount),
      currency: 'Fibd',
      allow_mpp: true,
      allow_trampoline_routing: true,
    });
    const hash = inv.invoice.data.payment_hash;
    const before = { alice: await localSum(alice), bob: await localSum(bob), carol: await localSum(carol) };
    const sent = await payThroughBob({ invoice: inv.invoice_address, max_fee_amount: hex(budget) });
    // Alice pays bob in one part; bob splits.
    expect(sent.routers).toHaveLength(1);
    const done = await ended(hash);
    if (done.status !== 'Success') throw new Error(`payment failed: ${done.failed_error}`);
    expect(big(done.fee)).toBe(budget);
    expect((await carol.call('get_invoice', { payment_hash: hash })).status).toBe('Paid');
    const own = await bob.call('get_payment', { payment_hash: hash });
    expect(own.status).toBe('Success');
    await until('balances to settle', async () => {
      const now = { alice: await localSum(alice), bob: await localSum(bob), carol: await localSum(carol) };
      return now.alice === before.alice - amount - budget &&
        now.bob === before.bob + budget &&
        now.carol === before.carol + amount
        ? true
        : undefined;
    });
    // Both of bob's channels to carol moved: the payment went in parts.
    const { channels } = await bob.call<{ channels: { local_balance: string }[] }>('list_channels', {
      peer_id: desc.nodes[2]!.peer_id,
    });
    expect(channels).toHaveLength(2);
    for (const c of channels) expect(big(c.local_balance)).toBeLessThan(500n * CKB - 100n * CKB);
  });
});
