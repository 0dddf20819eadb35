/**
 * Trampoline routing end to end: a devnet of three node processes, alice→bob public and bob→carol
 * private, driven only over JSON-RPC. Alice's graph never learns bob's private channel, so she has
 * no route to carol of her own; through the trampoline bob (`trampoline_hops`), who knows his own
 * channel, the payment succeeds. Alice pays the amount and the budget, bob keeps the budget (his
 * route to carol is his own channel), carol receives the amount.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DevnetDescription, type RunningDevnet, startDevnet } from '../../src/devnet/devnet.ts';
import { createRpcClient, type RpcClient } from '../../src/rpc/client.ts';
import { tempDir } from '../helpers/node-process.ts';
import { devnetBasePort } from '../helpers/ports.ts';
import { big, CKB, hex, until } from './helpers.ts';

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
        { from: 'alice', to: 'bob', funding: 500, udt: false, public: true },
        { from: 'bob', to: 'carol', funding: 500, udt: false, public: false },
      ],
    },
    reset: true,
    log: () => {},
  });
  desc = net.description;
  [alice, bob, carol] = desc.nodes.map((n) => createRpcClient(n.rpc_url)) as [
    RpcClient,
    RpcClient,
    RpcClient,
  ];
}, 240_000);

afterAll(async () => {
  await net?.stop();
}, 60_000);

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
});
