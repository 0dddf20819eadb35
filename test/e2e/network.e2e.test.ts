/**
 * End to end, as an application drives Strand: a devnet (dev chain + node processes) controlled
 * only over JSON-RPC: the seed's 500 / 250 channel, invoice and keysend payments, bad input,
 * cooperative close checked on chain.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadWalletKey } from '../../src/crypto/keyfile.ts';
import {
  DEVNET_PASSWORD,
  type DevnetDescription,
  type RunningDevnet,
  startDevnet,
} from '../../src/devnet/devnet.ts';
import { createRpcClient, type RpcClient } from '../../src/rpc/client.ts';
import { tempDir } from '../helpers/node-process.ts';
import { devnetBasePort } from '../helpers/ports.ts';
import { wsClient } from '../helpers/ws-client.ts';
import { big, CKB, hex, nodeClient, until, untilOrTell } from './helpers.ts';

let net: RunningDevnet;
let desc: DevnetDescription;
let alice: RpcClient;
let bob: RpcClient;
let carol: RpcClient;
let chain: RpcClient;

async function channelWith(client: RpcClient, peerId: string) {
  const { channels } = await client.call('list_channels', { peer_id: peerId });
  return channels[0];
}

const SIGHASH = '0x9bd7e06f3ecf4be0f2fcd2188b23f1b9fcc88e5d4b65a8637b17723bbda3cce8';
let closed: any;

beforeAll(async () => {
  net = await startDevnet({
    dir: path.join(tempDir('strand-e2e-'), 'net'),
    nodes: 3,
    blockIntervalMs: 200,
    // Short epochs: a force close settles after one epoch (the default commitment delay).
    epochLength: 10,
    basePort: devnetBasePort(),
    // The seed's case: alice funds 500 CKB, bob auto-accepts with 250.
    topology: {
      peers: [
        ['alice', 'bob'],
        ['bob', 'carol'],
        ['carol', 'alice'],
      ],
      channels: [
        { from: 'carol', to: 'alice', funding: 1000, udt: true, public: true },
        { from: 'alice', to: 'bob', funding: 500, udt: false, public: true },
        { from: 'bob', to: 'carol', funding: 500, udt: false, public: true },
      ],
    },
    reset: true,
    log: () => {},
  });
  desc = net.description;
  alice = nodeClient(desc.nodes[0]!.rpc_url);
  bob = nodeClient(desc.nodes[1]!.rpc_url);
  carol = nodeClient(desc.nodes[2]!.rpc_url);
  chain = createRpcClient(desc.chain.rpc_url);
}, 240_000);

afterAll(async () => {
  await net?.stop();
}, 60_000);

describe('a devnet driven over JSON-RPC', { timeout: 180_000 }, () => {
  it("opens the seed's channel: 438 / 188 CKB on each side, 750 CKB on chain", async () => {
    const a = await channelWith(alice, desc.nodes[1]!.peer_id);
    const b = await channelWith(bob, desc.nodes[0]!.peer_id);
    expect(a.state.state_name).toBe('CHANNEL_READY');
    expect(b.state.state_name).toBe('CHANNEL_READY');
    expect(big(a.local_balance)).toBe(438n * CKB);
    expect(big(a.remote_balance)).toBe(188n * CKB);
    expect(big(b.local_balance)).toBe(188n * CKB);
    expect(big(b.remote_balance)).toBe(438n * CKB);
    const cell = await chain.call('get_live_cell', [
      { tx_hash: a.channel_outpoint.slice(0, 66), index: '0x0' },
      false,
    ]);
    expect(cell.status).toBe('live');
    expect(big(cell.cell.output.capacity)).toBe(750n * CKB);
  });

  it("pays bob's invoice and a keysend; balances move by the amounts", async () => {
    const inv = await bob.call('new_invoice', {
      amount: '0x5f5e100',
      currency: 'Fibd',
      description: 'coffee',
    });
    const sent = await alice.call('send_payment', { invoice: inv.invoice_address });
    expect(sent.status).toBe('Created');
    expect(sent.failed_error).toBeNull();
    const hash = inv.invoice.data.payment_hash;
    await until('the payment', async () => {
      const p = await alice.call('get_payment', { payment_hash: hash });
      return p.status === 'Success' ? p : undefined;
    });
    expect((await bob.call('get_invoice', { payment_hash: hash })).status).toBe('Paid');

    const keysend = await alice.call('send_payment', {
      target_pubkey: desc.nodes[1]!.pubkey,
      amount: '0x2faf080',
      keysend: true,
    });
    await until('the keysend', async () => {
      const p = await alice.call('get_payment', { payment_hash: keysend.payment_hash });
      return p.status === 'Success' ? p : undefined;
    });
    const a = await channelWith(alice, desc.nodes[1]!.peer_id);
    expect(big(a.local_balance)).toBe(438n * CKB - 150_000_000n);
    expect(big(a.remote_balance)).toBe(188n * CKB + 150_000_000n);
    const listed = await alice.call('list_payments', {});
    expect(listed.payments.map((p: { payment_hash: string }) => p.payment_hash).sort()).toEqual(
      [hash, keysend.payment_hash].sort(),
    );
  });

  it('notifies store-change subscribers of a real payment on both sides', async () => {
    const payer = await wsClient(desc.nodes[0]!.rpc_url);
    const payee = await wsClient(desc.nodes[1]!.rpc_url);
    expect((await payer.call('subscribe_store_changes')).result).toBeDefined();
    expect((await payee.call('subscribe_store_changes')).result).toBeDefined();
    const inv = await bob.call('new_invoice', { amount: '0x186a0', currency: 'Fibd' });
    const hash = inv.invoice.data.payment_hash;
    await alice.call('send_payment', { invoice: inv.invoice_address });
    const results = (c: { notes: { params: { result: Record<string, any> } }[] }) =>
      c.notes.map((n) => n.params.result);
    await until('the payee to see Paid', async () =>
      results(payee).some(
        (r) =>
          r.PutCkbInvoiceStatus?.payment_hash === hash && r.PutCkbInvoiceStatus.invoice_status === 'Paid',
      )
        ? true
        : undefined,
    );
    await until('the payer to see Success', async () =>
      results(payer).some(
        (r) =>
          r.PutPaymentSession?.payment_hash === hash &&
          r.PutPaymentSession.payment_session.status === 'Success',
      )
        ? true
        : undefined,
    );
    const statuses = results(payee)
      .filter((r) => r.PutCkbInvoiceStatus?.payment_hash === hash)
      .map((r) => r.PutCkbInvoiceStatus.invoice_status);
    expect(statuses).toEqual(['Open', 'Received', 'Paid']);
    expect(results(payee)).toContainEqual({
      PutPreimage: { payment_hash: hash, payment_preimage: expect.stringMatching(/^0x[0-9a-f]{64}$/) },
    });
    expect(results(payer).some((r) => r.PutPreimage?.payment_hash === hash)).toBe(true);
    payer.close();
    payee.close();
  });

  it('signs an external funding transaction with a given key (dev sign_external_funding_tx)', async () => {
    const key = loadWalletKey(path.join(desc.nodes[2]!.dir, 'ckb', 'key'), { password: DEVNET_PASSWORD });
    const lock = { code_hash: SIGHASH, hash_type: 'type', args: desc.nodes[2]!.wallet_lock_args };
    const { objects } = await chain.call('get_cells', [
      { script: lock, script_type: 'lock', filter: { script_len_range: ['0x0', '0x1'] } },
      'asc',
      '0x1',
    ]);
    const cell = objects[0];
    const scripts = await chain.call('get_dev_scripts', []);
    const unsigned = {
      version: '0x0',
      cell_deps: scripts.secp256k1_blake160_sighash_all.cell_deps,
      header_deps: [],
      inputs: [{ previous_output: cell.out_point, since: '0x0' }],
      outputs: [{ capacity: `0x${(big(cell.output.capacity) - 100_000n).toString(16)}`, lock, type: null }],
      outputs_data: ['0x'],
      witnesses: [],
    };
    const { signed_funding_tx } = await carol.call('sign_external_funding_tx', {
      unsigned_funding_tx: unsigned,
      private_key: Buffer.from(key).toString('hex'),
    });
    expect(signed_funding_tx.witnesses[0]).toMatch(/^0x[0-9a-f]+$/);
    expect(await chain.call('send_transaction', [signed_funding_tx, 'passthrough'])).toMatch(
      /^0x[0-9a-f]{64}$/,
    );
    const other = await carol
      .call('sign_external_funding_tx', {
        unsigned_funding_tx: unsigned,
        private_key: `0x${'11'.repeat(32)}`,
      })
      .catch((e) => e);
    expect(other.message).toBe('no transaction inputs matched the provided private key');
    const short = await carol
      .call('sign_external_funding_tx', { unsigned_funding_tx: unsigned, private_key: '0x1234' })
      .catch((e) => e);
    expect(short.message).toBe('invalid private key length: expected 32 bytes, got 2');
  });

  it('refuses bad payments with clear errors', async () => {
    const e = await alice
      .call('send_payment', { target_pubkey: desc.nodes[1]!.pubkey, amount: '0x0', keysend: true })
      .catch((x) => x);
    expect(e.code).toBe(-32000);
    expect(e.message).toContain('amount must be greater than 0');
    const tooMuch = await alice
      .call('send_payment', {
        target_pubkey: desc.nodes[1]!.pubkey,
        amount: (10_000n * CKB).toString(16).replace(/^/, '0x'),
        keysend: true,
      })
      .catch((x) => x);
    expect(tooMuch.message).toMatch(/Failed to build route/);
  });

  it("forwards over two hops with the seed's fee: 100000 on 100000000, earned by bob; hop hints", async () => {
    // First over an explicit route (send_payment_with_router) …
    const ab = await channelWith(alice, desc.nodes[1]!.peer_id);
    const bcBob = await channelWith(bob, desc.nodes[2]!.peer_id);
    const bcCarol = await channelWith(carol, desc.nodes[1]!.peer_id);
    const amount = 100_000_000n;
    const fee = (amount * 1000n + 999_999n) / 1_000_000n;
    expect(fee).toBe(100_000n);
    const inv = await carol.call('new_invoice', { amount: '0x5f5e100', currency: 'Fibd' });
    const sent = await alice.call('send_payment_with_router', {
      invoice: inv.invoice_address,
      router: [
        {
          target: desc.nodes[1]!.pubkey,
          channel_outpoint: ab.channel_outpoint,
          amount_received: hex(amount + fee),
          incoming_tlc_expiry: hex(86_400_000n + 14_400_000n),
        },
        {
          target: desc.nodes[2]!.pubkey,
          channel_outpoint: bcBob.channel_outpoint,
          amount_received: hex(amount),
          incoming_tlc_expiry: hex(86_400_000n),
        },
      ],
    });
    expect(sent.fee).toBe('0x186a0');
    const hash = inv.invoice.data.payment_hash;
    const done = await until('the two-hop payment', async () => {
      const p = await alice.call('get_payment', { payment_hash: hash });
      return p.status === 'Success' ? p : undefined;
    });
    expect(done.fee).toBe('0x186a0');
    const ab2 = await channelWith(alice, desc.nodes[1]!.peer_id);
    const bc2 = await channelWith(bob, desc.nodes[2]!.peer_id);
    const carol2 = await channelWith(carol, desc.nodes[1]!.peer_id);
    expect(big(ab.local_balance) - big(ab2.local_balance)).toBe(amount + fee);
    // Bob: + (amount + fee) from alice, − amount to carol.
    expect(big(bcBob.local_balance) - big(bc2.local_balance)).toBe(amount);
    expect(big(carol2.local_balance) - big(bcCarol.local_balance)).toBe(amount);
    expect((await carol.call('get_invoice', { payment_hash: hash })).status).toBe('Paid');

    // … then by path-finding over the gossiped graph, as a wallet pays an invoice. Right after the
    // channels are ready the announcements may still be on their way: the seed's rule says retry.
    const inv2 = await carol.call('new_invoice', { amount: '0x5f5e100', currency: 'Fibd' });
    const routed = await until<{ fee: string }>('a route to carol', async () => {
      try {
        return await alice.call<{ fee: string }>('send_payment', { invoice: inv2.invoice_address });
      } catch (e) {
        if (/Failed to build route/.test((e as Error).message)) return undefined;
        throw e;
      }
    });
    expect(routed.fee).toBe('0x186a0');
    await until('the routed payment', async () => {
      const p = await alice.call('get_payment', { payment_hash: inv2.invoice.data.payment_hash });
      return p.status === 'Success' ? p : undefined;
    });
    const carol2b = await channelWith(carol, desc.nodes[1]!.peer_id);
    // The graph as alice learned it by gossip: the public channels and the three nodes.
    const { channels: known } = await alice.call('graph_channels', {});
    const ca = await channelWith(carol, desc.nodes[0]!.peer_id);
    expect(known.map((c: { channel_outpoint: string }) => c.channel_outpoint).sort()).toEqual(
      [ab.channel_outpoint, bcBob.channel_outpoint, ca.channel_outpoint].sort(),
    );
    const { nodes: seen } = await alice.call('graph_nodes', {});
    expect(seen.map((n: { pubkey: string }) => n.pubkey).sort()).toEqual(
      desc.nodes.map((n) => n.pubkey).sort(),
    );
    expect(big(carol2b.local_balance) - big(carol2.local_balance)).toBe(amount);

    // Path-finding over a hop hint as well: keysend 0.5 CKB.
    const hinted = await alice.call('send_payment', {
      target_pubkey: desc.nodes[2]!.pubkey,
      amount: hex(50_000_000n),
      keysend: true,
      hop_hints: [
        {
          pubkey: desc.nodes[1]!.pubkey,
          channel_outpoint: bcBob.channel_outpoint,
          fee_rate: '0x3e8',
          tlc_expiry_delta: hex(14_400_000n),
        },
      ],
    });
    expect(hinted.fee).toBe(hex(50_000n));
    await until('the hinted payment', async () => {
      const p = await alice.call('get_payment', { payment_hash: hinted.payment_hash });
      return p.status === 'Success' ? p : undefined;
    });
    const carol3 = await channelWith(carol, desc.nodes[1]!.peer_id);
    expect(big(carol3.local_balance) - big(carol2b.local_balance)).toBe(50_000_000n);
  });

  it('closes cooperatively: CLOSED with COOPERATIVE, the settlement on chain', async () => {
    const a = await channelWith(alice, desc.nodes[1]!.peer_id);
    await alice.call('shutdown_channel', {
      channel_id: a.channel_id,
      close_script: { code_hash: SIGHASH, hash_type: 'type', args: desc.nodes[0]!.wallet_lock_args },
      fee_rate: '0x3e8',
    });
    closed = await until('CLOSED', async () => {
      const { channels } = await alice.call('list_channels', {
        peer_id: desc.nodes[1]!.peer_id,
        include_closed: true,
      });
      return channels.find((c: { state: { state_name: string } }) => c.state.state_name === 'CLOSED');
    });
    expect(closed.state.state_flags).toContain('COOPERATIVE');
    const tx = await until('the close transaction', async () => {
      const t = await chain.call('get_transaction', [closed.shutdown_transaction_hash]);
      return t?.tx_status?.status === 'committed' ? t.transaction : undefined;
    });
    expect(tx.inputs).toHaveLength(1);
    expect(tx.inputs[0].previous_output.tx_hash).toBe(closed.channel_outpoint.slice(0, 66));
    const to = (args: string) => tx.outputs.find((o: { lock: { args: string } }) => o.lock.args === args);
    expect(to(desc.nodes[0]!.wallet_lock_args)).toBeDefined();
    expect(to(desc.nodes[1]!.wallet_lock_args)).toBeDefined();
  });

  it('runs a UDT channel: funded in test tokens, pays tokens by keysend', async () => {
    const scripts = await chain.call('get_dev_scripts', []);
    const udt = scripts.test_udt.script;
    const c = await channelWith(carol, desc.nodes[0]!.peer_id);
    expect(c.state.state_name).toBe('CHANNEL_READY');
    expect(c.funding_udt_type_script).toEqual(udt);
    expect(big(c.local_balance)).toBe(1000n);
    const sent = await carol.call('send_payment', {
      target_pubkey: desc.nodes[0]!.pubkey,
      amount: '0x64',
      keysend: true,
      udt_type_script: udt,
    });
    await until('the token payment', async () => {
      const p = await carol.call('get_payment', { payment_hash: sent.payment_hash });
      return p.status === 'Success' ? p : undefined;
    });
    const after = await channelWith(carol, desc.nodes[0]!.peer_id);
    expect(big(after.local_balance)).toBe(900n);
    expect(big(after.remote_balance)).toBe(big(c.remote_balance) + 100n);
  });

  it("force-closes bob's channel to carol: commitment on chain, bob's share settled after the delay", async () => {
    const bc = await channelWith(bob, desc.nodes[2]!.peer_id);
    await bob.call('shutdown_channel', { channel_id: bc.channel_id, force: true });
    const done = await untilOrTell(
      path.join(desc.nodes[1]!.dir, 'node.log'),
      'the force close to settle',
      async () => {
        const { channels } = await bob.call('list_channels', {
          peer_id: desc.nodes[2]!.peer_id,
          include_closed: true,
        });
        const c = channels.find((x: { channel_id: string }) => x.channel_id === bc.channel_id);
        return c?.state.state_name === 'CLOSED' && !c.state.state_flags.includes('WAITING_ONCHAIN_SETTLEMENT')
          ? c
          : undefined;
      },
    );
    expect(done.state.state_flags).toEqual(['UNCOOPERATIVE_LOCAL']);
    // The network learns of it: both ends gossip their direction disabled, so alice, a third
    // party, no longer lists the channel (the reference hides a channel disabled both ways).
    await until('the closed channel to leave alice’s graph', async () => {
      const { channels } = await alice.call('graph_channels', {});
      return channels.some((x: { channel_outpoint: string }) => x.channel_outpoint === bc.channel_outpoint)
        ? undefined
        : true;
    });
    const commitment = await chain.call('get_transaction', [done.shutdown_transaction_hash]);
    expect(commitment.tx_status.status).toBe('committed');
    expect(commitment.transaction.inputs[0].previous_output.tx_hash).toBe(bc.channel_outpoint.slice(0, 66));
    // Bob's balance + reserve comes back to his wallet lock (less the settlement fee).
    const bobLock = { code_hash: SIGHASH, hash_type: 'type', args: desc.nodes[1]!.wallet_lock_args };
    const want = big(bc.local_balance) + 62n * CKB;
    await until("bob's settlement", async () => {
      const { objects } = await chain.call('get_cells', [
        { script: bobLock, script_type: 'lock' },
        'desc',
        '0x64',
      ]);
      return objects.some((c: { output: { capacity: string } }) => {
        const v = big(c.output.capacity);
        return v <= want && v > want - CKB / 100n;
      })
        ? true
        : undefined;
    });
  });

  it('paid each side of the closed channel exactly its balance plus reserve', async () => {
    const tx = (await chain.call('get_transaction', [closed.shutdown_transaction_hash])).transaction;
    const total = tx.outputs.reduce((s: bigint, o: { capacity: string }) => s + big(o.capacity), 0n);
    expect(total).toBeLessThanOrEqual(750n * CKB);
    const aliceOut = tx.outputs.find(
      (o: { lock: { args: string } }) => o.lock.args === desc.nodes[0]!.wallet_lock_args,
    );
    // Alice paid 1 + 0.5 (test 2), 0.001 (pubsub test), 2 × 1.001 and 0.5005 (two hops); her
    // balance plus the 62-CKB reserve comes back, less her share of the close fee.
    const expected = 438n * CKB - 150_000_000n - 100_000n - 2n * 100_100_000n - 50_050_000n + 62n * CKB;
    expect(big(aliceOut.capacity)).toBeLessThanOrEqual(expected);
    expect(big(aliceOut.capacity)).toBeGreaterThan(expected - CKB / 100n);
    const bobOut = tx.outputs.find(
      (o: { lock: { args: string } }) => o.lock.args === desc.nodes[1]!.wallet_lock_args,
    );
    expect(big(bobOut.capacity) + big(aliceOut.capacity)).toBe(total);
    expect(big(bobOut.capacity)).toBeLessThanOrEqual(750n * CKB - expected);
  });
});
