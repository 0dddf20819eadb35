/**
 * Payments end to end (issue #7's acceptance), on one devnet of six node processes driven only
 * over JSON-RPC. The public CKB channels, opened by the first-named node with its forwarding fee:
 *
 *   alice ── bob ── carol ── dave ── erin      bob 1000 ppm, carol 1500, dave 2000
 *     └──── frank ───┘                         frank 2500 (the diamond's dearer branch)
 *
 * and, opened during the tests (long after the peers connected and synced), test-UDT channels
 * bob ══ dave ══ frank. Nobody is peered with a node more than one channel away, so every remote
 * channel a payer routes over was learnt by gossip relayed through its neighbours.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RpcError } from '../../src/client/index.ts';
import { bytesToHex, hexToBytes } from '../../src/codec/hex.ts';
import { ckbHash } from '../../src/crypto/hash.ts';
import { type DevnetNodeInfo, type RunningDevnet, startDevnet } from '../../src/devnet/devnet.ts';
import { createRpcClient, type RpcClient } from '../../src/rpc/client.ts';
import { tempDir } from '../helpers/node-process.ts';
import { devnetBasePort } from '../helpers/ports.ts';
import { big, CKB, hex, nodeClient, until as untilDefined } from './helpers.ts';

/** What a hop earns for forwarding `amount`: ceil(amount × ppm / 1e6). */
const feeOf = (amount: bigint, ppm: bigint) => (amount * ppm + 999_999n) / 1_000_000n;
const PPM = { bob: 1000n, carol: 1500n, dave: 2000n, frank: 2500n, daveUdt: 2000n };

type Name = 'alice' | 'bob' | 'carol' | 'dave' | 'erin' | 'frank';
let net: RunningDevnet;
const info = {} as Record<Name, DevnetNodeInfo>;
const rpc = {} as Record<Name, RpcClient>;
let udt: { code_hash: string; hash_type: string; args: string };

const until = <T>(what: string, fn: () => Promise<T | undefined>, ms = 60_000) =>
  untilDefined(what, fn, ms, 200);

/** `who`'s ready channel with `peer` (CKB, or the test-UDT one). */
async function channel(who: Name, peer: Name, opts: { udt?: boolean } = {}) {
  const { channels } = await rpc[who].call('list_channels', { peer_id: info[peer].peer_id });
  const found = channels.find(
    (c: { state: { state_name: string }; funding_udt_type_script: unknown }) =>
      c.state.state_name === 'CHANNEL_READY' && !!c.funding_udt_type_script === !!opts.udt,
  );
  if (!found) throw new Error(`${who} has no ready ${opts.udt ? 'UDT ' : ''}channel with ${peer}`);
  return found;
}

/** `who`'s local balance in its channel with `peer`. */
const local = async (who: Name, peer: Name, opts: { udt?: boolean } = {}) =>
  big((await channel(who, peer, opts)).local_balance);

/**
 * send_payment, retried while the route is not known yet (the seed: right after a channel is
 * ready the route may not exist; its announcements are still travelling).
 */
interface PaymentRecord {
  payment_hash: string;
  status: string;
  fee: string;
  failed_error: string | null;
}

async function sendRouted(from: Name, params: object): Promise<PaymentRecord> {
  return until<PaymentRecord>(`a route for ${JSON.stringify(params).slice(0, 80)}`, async () => {
    try {
      return await rpc[from].call<PaymentRecord>('send_payment', params);
    } catch (e) {
      if (/Failed to build route/.test((e as Error).message)) return undefined;
      throw e;
    }
  });
}

async function outcome(from: Name, paymentHash: string, want: 'Success' | 'Failed' = 'Success') {
  const p = await until(`payment ${paymentHash} to end`, async () => {
    const p = await rpc[from].call('get_payment', { payment_hash: paymentHash });
    return p.status === 'Success' || p.status === 'Failed' ? p : undefined;
  });
  if (p.status !== want) throw new Error(`payment ${p.status}, not ${want}: ${p.failed_error}`);
  return p;
}

async function waitReady(who: Name, peer: Name, opts: { udt?: boolean } = {}) {
  return until(`${who}–${peer} ready`, () => channel(who, peer, opts).catch(() => undefined), 120_000);
}

beforeAll(async () => {
  net = await startDevnet({
    dir: path.join(tempDir('strand-e2e-pay-'), 'net'),
    nodes: 6,
    blockIntervalMs: 200,
    basePort: devnetBasePort(),
    topology: {
      peers: [
        ['alice', 'bob'],
        ['bob', 'carol'],
        ['carol', 'dave'],
        ['dave', 'erin'],
        ['alice', 'frank'],
        ['frank', 'carol'],
        ['bob', 'dave'],
        ['dave', 'frank'],
      ],
      channels: [
        { from: 'alice', to: 'bob', funding: 1000, udt: false, public: true },
        { from: 'bob', to: 'carol', funding: 500, udt: false, public: true, fee_ppm: 1000 },
        { from: 'carol', to: 'dave', funding: 500, udt: false, public: true, fee_ppm: 1500 },
        { from: 'dave', to: 'erin', funding: 500, udt: false, public: true, fee_ppm: 2000 },
        { from: 'alice', to: 'frank', funding: 1000, udt: false, public: true },
        { from: 'frank', to: 'carol', funding: 1000, udt: false, public: true, fee_ppm: 2500 },
      ],
    },
    reset: true,
    log: () => {},
  });
  for (const n of net.description.nodes) {
    info[n.name as Name] = n;
    rpc[n.name as Name] = nodeClient(n.rpc_url);
  }
  udt = (await createRpcClient(net.description.chain.rpc_url).call('get_dev_scripts', [])).test_udt.script;
}, 240_000);

afterAll(async () => {
  await net?.stop();
}, 60_000);

describe('payments across a devnet', { timeout: 120_000 }, () => {
  it('pays along the five-node line alice → erin: each hop earns ceil(amount × ppm / 1e6) of what it forwards', async () => {
    const amount = 123_456_789n;
    const feeDave = feeOf(amount, PPM.dave);
    const feeCarol = feeOf(amount + feeDave, PPM.carol);
    const feeBob = feeOf(amount + feeDave + feeCarol, PPM.bob);
    const fee = feeBob + feeCarol + feeDave;
    const before = {
      alice: await local('alice', 'bob'),
      bobIn: await local('bob', 'alice'),
      bobOut: await local('bob', 'carol'),
      carolIn: await local('carol', 'bob'),
      carolOut: await local('carol', 'dave'),
      daveIn: await local('dave', 'carol'),
      daveOut: await local('dave', 'erin'),
      erin: await local('erin', 'dave'),
    };
    const inv = await rpc.erin.call('new_invoice', { amount: hex(amount), currency: 'Fibd' });
    const sent = await sendRouted('alice', { invoice: inv.invoice_address });
    expect(sent.status).toBe('Created');
    expect(sent.fee).toBe(hex(fee));
    const done = await outcome('alice', sent.payment_hash);
    expect(done.fee).toBe(hex(fee));
    expect((await rpc.erin.call('get_invoice', { payment_hash: sent.payment_hash })).status).toBe('Paid');

    expect(before.alice - (await local('alice', 'bob'))).toBe(amount + fee);
    const bobIn = (await local('bob', 'alice')) - before.bobIn;
    const bobOut = before.bobOut - (await local('bob', 'carol'));
    expect([bobIn, bobOut]).toEqual([amount + fee, amount + feeDave + feeCarol]);
    expect(bobIn - bobOut).toBe(feeBob);
    const carolIn = (await local('carol', 'bob')) - before.carolIn;
    const carolOut = before.carolOut - (await local('carol', 'dave'));
    expect([carolIn, carolOut]).toEqual([amount + feeDave + feeCarol, amount + feeDave]);
    const daveIn = (await local('dave', 'carol')) - before.daveIn;
    const daveOut = before.daveOut - (await local('dave', 'erin'));
    expect([daveIn, daveOut]).toEqual([amount + feeDave, amount]);
    expect((await local('erin', 'dave')) - before.erin).toBe(amount);

    // Alice is peered with bob and frank only: carol–dave and dave–erin reached her by relay.
    const { peers } = await rpc.alice.call('list_peers', {});
    expect(peers.map((p: { pubkey: string }) => p.pubkey).sort()).toEqual(
      [info.bob.pubkey, info.frank.pubkey].sort(),
    );
    const { channels } = await rpc.alice.call('graph_channels', {});
    const outpoints = channels.map((c: { channel_outpoint: string }) => c.channel_outpoint);
    expect(outpoints).toContain((await channel('dave', 'erin')).channel_outpoint);
    expect(outpoints).toContain((await channel('carol', 'dave')).channel_outpoint);
  });

  it('sends a keysend over two hops: alice → bob → carol, bob earns the fee', async () => {
    const amount = 7_654_321n;
    const fee = feeOf(amount, PPM.bob);
    const bobIn = await local('bob', 'alice');
    const bobOut = await local('bob', 'carol');
    const carol = await local('carol', 'bob');
    const sent = await sendRouted('alice', {
      target_pubkey: info.carol.pubkey,
      amount: hex(amount),
      keysend: true,
    });
    expect(sent.fee).toBe(hex(fee));
    await outcome('alice', sent.payment_hash);
    expect((await local('bob', 'alice')) - bobIn).toBe(amount + fee);
    expect(bobOut - (await local('bob', 'carol'))).toBe(amount);
    expect((await local('carol', 'bob')) - carol).toBe(amount);
  });

  it('refuses a payment no route can carry; its record says Failed with the reason', async () => {
    // dave–erin holds less than 900 CKB in all: no path to erin for that much.
    const inv = await rpc.erin.call('new_invoice', { amount: hex(900n * CKB), currency: 'Fibd' });
    const hash = inv.invoice.data.payment_hash;
    const before = await local('alice', 'bob');
    const err: RpcError = await rpc.alice
      .call('send_payment', { invoice: inv.invoice_address })
      .catch((e) => e);
    expect(err.code).toBe(-32000);
    expect(err.message).toBe('Send payment error: Failed to build route, PathFind error: no path found');
    const p = await rpc.alice.call('get_payment', { payment_hash: hash });
    expect(p.status).toBe('Failed');
    expect(p.failed_error).toBe(err.message);
    expect(await local('alice', 'bob')).toBe(before);
    expect((await rpc.erin.call('get_invoice', { payment_hash: hash })).status).toBe('Open');
  });

  it('retries over the other branch when a hop cannot forward: bob lacks 480 CKB, frank carries it', async () => {
    // Bob holds under 438 CKB towards carol: the cheaper route through him fails at his hop.
    const amount = 480n * CKB;
    expect(await local('bob', 'carol')).toBeLessThan(amount);
    const bob = [await local('bob', 'alice'), await local('bob', 'carol')];
    const frankIn = await local('frank', 'alice');
    const frankOut = await local('frank', 'carol');
    const carol = await local('carol', 'frank');
    const inv = await rpc.carol.call('new_invoice', { amount: hex(amount), currency: 'Fibd' });
    const sent = await sendRouted('alice', { invoice: inv.invoice_address });
    // The first route chosen goes through bob (his fee) …
    expect(sent.fee).toBe(hex(feeOf(amount, PPM.bob)));
    const done = await outcome('alice', sent.payment_hash);
    // … the one that succeeded through frank, who earned the fee; bob's channels are as before.
    const fee = feeOf(amount, PPM.frank);
    expect(done.fee).toBe(hex(fee));
    expect((await local('frank', 'alice')) - frankIn).toBe(amount + fee);
    expect(frankOut - (await local('frank', 'carol'))).toBe(amount);
    expect((await local('carol', 'frank')) - carol).toBe(amount);
    expect([await local('bob', 'alice'), await local('bob', 'carol')]).toEqual(bob);
  });

  it('pays test tokens over two hops on UDT channels opened after the peers synced (dave–frank learnt by relay)', async () => {
    await rpc.bob.call('open_channel', {
      peer_id: info.dave.peer_id,
      pubkey: info.dave.pubkey,
      funding_amount: hex(1000n),
      funding_udt_type_script: udt,
      public: true,
    });
    await rpc.dave.call('open_channel', {
      peer_id: info.frank.peer_id,
      pubkey: info.frank.pubkey,
      funding_amount: hex(1000n),
      funding_udt_type_script: udt,
      public: true,
      tlc_fee_proportional_millionths: hex(PPM.daveUdt),
    });
    await waitReady('bob', 'dave', { udt: true });
    const df = await waitReady('dave', 'frank', { udt: true });
    expect(df.funding_udt_type_script).toEqual(udt);
    // Bob is not frank's peer: the dave–frank channel can only reach him through gossip relay.
    const { peers } = await rpc.bob.call('list_peers', {});
    expect(peers.map((p: { pubkey: string }) => p.pubkey)).not.toContain(info.frank.pubkey);
    await until("dave–frank in bob's graph", async () => {
      const { channels } = await rpc.bob.call('graph_channels', {});
      return channels.some((c: { channel_outpoint: string }) => c.channel_outpoint === df.channel_outpoint)
        ? true
        : undefined;
    });

    const amount = 500n;
    const fee = feeOf(amount, PPM.daveUdt);
    const bob = await local('bob', 'dave', { udt: true });
    const daveIn = await local('dave', 'bob', { udt: true });
    const daveOut = await local('dave', 'frank', { udt: true });
    const frank = await local('frank', 'dave', { udt: true });
    const sent = await sendRouted('bob', {
      target_pubkey: info.frank.pubkey,
      amount: hex(amount),
      keysend: true,
      udt_type_script: udt,
    });
    expect(sent.fee).toBe(hex(fee));
    await outcome('bob', sent.payment_hash);
    expect(bob - (await local('bob', 'dave', { udt: true }))).toBe(amount + fee);
    expect((await local('dave', 'bob', { udt: true })) - daveIn).toBe(amount + fee);
    expect(daveOut - (await local('dave', 'frank', { udt: true }))).toBe(amount);
    expect((await local('frank', 'dave', { udt: true })) - frank).toBe(amount);
  });

  it('holds a payment to a hold invoice until settle_invoice: Inflight / Received, then Success / Paid', async () => {
    // Bob knows only the hash; the preimage stays with the test until it settles.
    const preimage = `0x${'5a'.repeat(32)}`;
    const paymentHash = bytesToHex(ckbHash(hexToBytes(preimage)));
    const inv = await rpc.bob.call('new_invoice', {
      amount: hex(CKB),
      currency: 'Fibd',
      payment_hash: paymentHash,
    });
    const before = await local('alice', 'bob');
    const sent = await sendRouted('alice', { invoice: inv.invoice_address });
    await until('the invoice to be Received', async () =>
      (await rpc.bob.call('get_invoice', { payment_hash: paymentHash })).status === 'Received'
        ? true
        : undefined,
    );
    expect((await rpc.alice.call('get_payment', { payment_hash: sent.payment_hash })).status).toBe(
      'Inflight',
    );
    await rpc.bob.call('settle_invoice', { payment_hash: paymentHash, payment_preimage: preimage });
    await outcome('alice', paymentHash);
    expect((await rpc.bob.call('get_invoice', { payment_hash: paymentHash })).status).toBe('Paid');
    expect(before - (await local('alice', 'bob'))).toBe(CKB);
  });

  it('fails a payment to a cancelled hold invoice: Failed / Cancelled, nothing moves', async () => {
    const paymentHash = bytesToHex(ckbHash(hexToBytes(`0x${'6b'.repeat(32)}`)));
    const inv = await rpc.bob.call('new_invoice', {
      amount: hex(CKB),
      currency: 'Fibd',
      payment_hash: paymentHash,
    });
    const before = await local('alice', 'bob');
    await sendRouted('alice', { invoice: inv.invoice_address });
    await until('the invoice to be Received', async () =>
      (await rpc.bob.call('get_invoice', { payment_hash: paymentHash })).status === 'Received'
        ? true
        : undefined,
    );
    expect((await rpc.alice.call('get_payment', { payment_hash: paymentHash })).status).toBe('Inflight');
    await rpc.bob.call('cancel_invoice', { payment_hash: paymentHash });
    const failed = await outcome('alice', paymentHash, 'Failed');
    expect(failed.failed_error).toBe('InvoiceCancelled');
    expect((await rpc.bob.call('get_invoice', { payment_hash: paymentHash })).status).toBe('Cancelled');
    expect(await local('alice', 'bob')).toBe(before);
  });

  it('pages list_payments with limit and the after cursor, and filters by status', async () => {
    const all = await rpc.alice.call('list_payments', { limit: hex(1000n) });
    const hashes: string[] = all.payments.map((p: { payment_hash: string }) => p.payment_hash);
    expect(hashes.length).toBeGreaterThanOrEqual(6);
    expect(hashes).toEqual([...hashes].sort());
    expect(all.last_cursor).toBe(hashes.at(-1));

    const paged: string[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await rpc.alice.call('list_payments', { limit: '0x2', ...(after ? { after } : {}) });
      expect(page.payments.length).toBeLessThanOrEqual(2);
      if (page.payments.length === 0) {
        expect(page.last_cursor).toBeNull();
        break;
      }
      paged.push(...page.payments.map((p: { payment_hash: string }) => p.payment_hash));
      after = page.last_cursor;
    }
    expect(paged).toEqual(hashes);

    const byStatus = async (status: string) =>
      (await rpc.alice.call('list_payments', { status, limit: hex(1000n) })).payments as {
        payment_hash: string;
        status: string;
      }[];
    const success = await byStatus('Success');
    const failed = await byStatus('Failed');
    expect(success.every((p) => p.status === 'Success')).toBe(true);
    expect(failed.every((p) => p.status === 'Failed')).toBe(true);
    expect(success.length).toBeGreaterThanOrEqual(4);
    expect(failed.length).toBeGreaterThanOrEqual(2);
    expect(success.length + failed.length).toBe(hashes.length);

    const bad: RpcError = await rpc.alice.call('list_payments', { after: '0x1234' }).catch((e) => e);
    expect(bad.code).toBe(-32602);
    expect(JSON.stringify([bad.message, bad.data])).toContain('after');
    const badStatus: RpcError = await rpc.alice.call('list_payments', { status: 'Paid' }).catch((e) => e);
    expect(badStatus.code).toBe(-32602);
  });
});
