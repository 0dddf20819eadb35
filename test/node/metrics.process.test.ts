/**
 * What an operator watches, on a devnet of three node processes (alice ── bob ── carol, bob
 * forwarding at 1000 ppm): `/metrics` at each node's `fiber.metrics_addr` (scrape, pay once,
 * scrape again: the counters moved by exactly one payment), the channel and payment events in
 * each node's log, and a closed channel listed as disabled.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bytesToHex, hexToBytes } from '../../src/codec/hex.ts';
import { ckbHash } from '../../src/crypto/hash.ts';
import { type DevnetNodeInfo, type RunningDevnet, startDevnet } from '../../src/devnet/devnet.ts';
import { createRpcClient, type RpcClient } from '../../src/rpc/client.ts';
import { big, hex, until } from '../e2e/helpers.ts';
import { tempDir } from '../helpers/node-process.ts';
import { devnetBasePort } from '../helpers/ports.ts';

type Name = 'alice' | 'bob' | 'carol';
let net: RunningDevnet;
const info = {} as Record<Name, DevnetNodeInfo>;
const rpc = {} as Record<Name, RpcClient>;

async function scrape(who: Name): Promise<string> {
  const res = await fetch(info[who].metrics_url);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return res.text();
}

/** The value of one sample (`name{a="b",…}`); 0 when the series does not exist yet. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(m[3]);
  }
  return 0;
}

/** The node's log, one parsed JSON object a line. */
function logOf(who: Name): Record<string, unknown>[] {
  return fs
    .readFileSync(path.join(info[who].dir, 'node.log'), 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

const events = (who: Name, event: string) => logOf(who).filter((e) => e.event === event);

async function invoice(amount: bigint): Promise<{ invoice_address: string; hash: string }> {
  const r = await rpc.carol.call('new_invoice', { amount: hex(amount), currency: 'Fibd' });
  return { invoice_address: r.invoice_address, hash: r.invoice.data.payment_hash };
}

async function outcome(paymentHash: string) {
  return until(`payment ${paymentHash} to end`, async () => {
    const p = await rpc.alice.call('get_payment', { payment_hash: paymentHash });
    return p.status === 'Success' || p.status === 'Failed' ? p : undefined;
  });
}

beforeAll(async () => {
  // The nodes log a TLC added or settled at debug (the devnet's processes inherit the level).
  process.env.STRAND_LOG = 'debug';
  net = await startDevnet({
    dir: path.join(tempDir('strand-metrics-'), 'net'),
    nodes: 3,
    blockIntervalMs: 200,
    basePort: devnetBasePort(),
    topology: {
      peers: [
        ['alice', 'bob'],
        ['bob', 'carol'],
      ],
      channels: [
        { from: 'alice', to: 'bob', funding: 1000, udt: false, public: true },
        { from: 'bob', to: 'carol', funding: 1000, udt: false, public: true, fee_ppm: 1000 },
      ],
    },
    reset: true,
    log: () => {},
  });
  for (const n of net.description.nodes) {
    info[n.name as Name] = n;
    rpc[n.name as Name] = createRpcClient(n.rpc_url);
  }
  // A first payment, retried until bob's channel to carol has reached alice by gossip: the
  // measured payment below then needs exactly one send_payment.
  const first = await invoice(1_000_000n);
  const sent = await until<{ payment_hash: string }>('a route to carol', async () => {
    try {
      return await rpc.alice.call('send_payment', { invoice: first.invoice_address });
    } catch (e) {
      if (/Failed to build route/.test((e as Error).message)) return undefined;
      throw e;
    }
  });
  expect((await outcome(sent.payment_hash)).status).toBe('Success');
}, 240_000);

afterAll(async () => {
  await net?.stop();
}, 60_000);

describe('metrics and events of a node', { timeout: 120_000 }, () => {
  it('counts one payment exactly once: payer, forwarder (with its fee) and the RPC call', async () => {
    const amount = 123_456_789n;
    const fee = (amount * 1000n + 999_999n) / 1_000_000n;
    const inv = await invoice(amount);
    const before = { alice: await scrape('alice'), bob: await scrape('bob'), carol: await scrape('carol') };

    const sent = await rpc.alice.call('send_payment', { invoice: inv.invoice_address });
    const done = await outcome(sent.payment_hash);
    expect(done.status).toBe('Success');
    expect(big(done.fee)).toBe(fee);
    const after = { alice: await scrape('alice'), bob: await scrape('bob'), carol: await scrape('carol') };

    const delta = (who: Name, name: string, labels?: Record<string, string>) =>
      sample(after[who], name, labels) - sample(before[who], name, labels);
    expect(delta('alice', 'strand_payments_completed_total', { status: 'Success' })).toBe(1);
    expect(delta('alice', 'strand_payments_completed_total', { status: 'Failed' })).toBe(0);
    expect(delta('alice', 'strand_payment_duration_seconds_count', { status: 'Success' })).toBe(1);
    expect(delta('alice', 'strand_rpc_requests_total', { method: 'send_payment', code: '0' })).toBe(1);
    expect(delta('alice', 'strand_payments', { status: 'Success' })).toBe(1);
    expect(delta('bob', 'strand_forwarded_payments_total', { asset: 'ckb' })).toBe(1);
    expect(delta('bob', 'strand_forwarded_amount_total', { asset: 'ckb' })).toBe(Number(amount));
    expect(delta('bob', 'strand_forwarding_fees_total', { asset: 'ckb' })).toBe(Number(fee));
    // The payer and the payee forward nothing.
    expect(delta('alice', 'strand_forwarded_payments_total', { asset: 'ckb' })).toBe(0);
    expect(delta('carol', 'strand_forwarded_payments_total', { asset: 'ckb' })).toBe(0);
    // Every channel step of the payment was committed to the store.
    expect(delta('alice', 'strand_store_commit_duration_seconds_count')).toBeGreaterThan(0);
    // The forwarder and the payee each peeled the payment's onion once, and (the curve thread
    // started by the first payment) with help: made ahead, or with its ECDH from the thread.
    const peels = (who: Name, made: string) => delta(who, 'strand_onion_peels_total', { made });
    for (const who of ['bob', 'carol'] as const)
      expect(peels(who, 'ahead') + peels(who, 'point') + peels(who, 'none')).toBe(1);
    expect(peels('alice', 'ahead') + peels('alice', 'point') + peels('alice', 'none')).toBe(0);
    expect(
      peels('bob', 'ahead') + peels('bob', 'point') + peels('carol', 'ahead') + peels('carol', 'point'),
    ).toBeGreaterThan(0);
    // Every store flush is timed: as many observations as flushes.
    expect(delta('alice', 'strand_store_flush_duration_seconds_count')).toBe(
      delta('alice', 'strand_store_syncs_total'),
    );
    expect(delta('alice', 'strand_store_flush_duration_seconds_count')).toBeGreaterThan(0);

    expect(sample(after.bob, 'strand_peers_connected')).toBe(2);
    expect(sample(after.bob, 'strand_channels', { state: 'CHANNEL_READY' })).toBe(2);
    expect(sample(after.alice, 'strand_tlcs_pending', { direction: 'offered' })).toBe(0);
    expect(sample(after.bob, 'strand_gossip_messages_received_total')).toBeGreaterThan(0);
    expect(sample(after.bob, 'strand_gossip_messages_sent_total')).toBeGreaterThan(0);
    // The channel messages of the payment, by kind: one TLC added at each hop and settled back;
    // every node both signed and revoked (the removal rounds' last legs may still be on the way).
    const msgs = (who: Name, type: string) => delta(who, 'strand_peer_messages_sent_total', { type });
    expect(['alice', 'bob', 'carol'].map((who) => msgs(who as Name, 'AddTlc'))).toEqual([1, 1, 0]);
    expect(['alice', 'bob', 'carol'].map((who) => msgs(who as Name, 'RemoveTlc'))).toEqual([0, 1, 1]);
    for (const who of ['alice', 'bob', 'carol'] as Name[]) {
      expect(msgs(who, 'CommitmentSigned'), `${who} CommitmentSigned`).toBeGreaterThan(0);
      expect(msgs(who, 'RevokeAndAck'), `${who} RevokeAndAck`).toBeGreaterThan(0);
    }

    // The same payment in the logs: added and settled at every hop, the outcome at the payer.
    const hash = sent.payment_hash;
    for (const who of ['alice', 'bob', 'carol'] as Name[]) {
      const added = events(who, 'tlc_added').filter((e) => e.payment_hash === hash);
      const settled = events(who, 'tlc_settled').filter((e) => e.payment_hash === hash);
      expect(added.length, `${who} tlc_added`).toBe(who === 'bob' ? 2 : 1);
      expect(settled.length, `${who} tlc_settled`).toBe(who === 'bob' ? 2 : 1);
      expect(added[0]).toMatchObject({ level: 20, msg: 'TLC added' });
      expect(added[0]!.channel_id).toMatch(/^0x[0-9a-f]{64}$/);
    }
    const ok = events('alice', 'payment_succeeded').filter((e) => e.payment_hash === hash);
    expect(ok).toHaveLength(1);
    expect(ok[0]).toMatchObject({ level: 20, status: 'Success', amount: amount.toString() });
  });

  it('shows a held payment as pending TLCs at every hop until the payee settles it', async () => {
    const preimage = `0x${'5a'.repeat(32)}`;
    const paymentHash = bytesToHex(ckbHash(hexToBytes(preimage)));
    const inv = await rpc.carol.call('new_invoice', {
      amount: hex(2_000_000n),
      currency: 'Fibd',
      payment_hash: paymentHash,
    });
    await rpc.alice.call('send_payment', { invoice: inv.invoice_address });
    await until('the invoice to be Received', async () =>
      (await rpc.carol.call('get_invoice', { payment_hash: paymentHash })).status === 'Received'
        ? true
        : undefined,
    );
    const pending = (text: string) => [
      sample(text, 'strand_tlcs_pending', { direction: 'offered' }),
      sample(text, 'strand_tlcs_pending', { direction: 'received' }),
    ];
    // Bob's offer to carol is committed before carol holds it; alice's to bob before that.
    expect(pending(await scrape('alice'))).toEqual([1, 0]);
    expect(pending(await scrape('bob'))).toEqual([1, 1]);
    expect(pending(await scrape('carol'))).toEqual([0, 1]);
    await rpc.carol.call('settle_invoice', { payment_hash: paymentHash, payment_preimage: preimage });
    expect((await outcome(paymentHash)).status).toBe('Success');
    await until('no TLC pending at alice', async () => {
      const [offered, received] = pending(await scrape('alice'));
      return offered === 0 && received === 0 ? true : undefined;
    });
  });

  it('logs a TLC the payee refuses with its reason, and the failed payment', async () => {
    const inv = await invoice(5_000_000n);
    await rpc.carol.call('cancel_invoice', { payment_hash: inv.hash });
    const sent = await rpc.alice.call('send_payment', { invoice: inv.invoice_address });
    expect((await outcome(sent.payment_hash)).status).toBe('Failed');
    const refused = events('carol', 'tlc_failed').filter((e) => e.payment_hash === inv.hash);
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatchObject({ level: 30, direction: 'received' });
    expect(String(refused[0]!.reason)).toMatch(/^[A-Z][A-Za-z]+$/);
    const failed = await until('the failed payment in the log', async () => {
      const found = events('alice', 'payment_failed').filter((e) => e.payment_hash === inv.hash);
      return found.length ? found : undefined;
    });
    expect(failed).toHaveLength(1);
    expect(failed[0]!.reason).toBeTruthy();
  });

  it('logs the channels opened, ready and closed; a closed channel is listed disabled', async () => {
    const opened = events('alice', 'channel_opened');
    const ready = events('alice', 'channel_ready');
    expect(opened).toHaveLength(1);
    expect(ready).toHaveLength(1);
    const { channels } = await rpc.alice.call('list_channels', { peer_id: info.bob.peer_id });
    const ch = channels[0];
    expect(ready[0]!.channel_id).toBe(ch.channel_id);
    expect(ch.enabled).toBe(true);
    await rpc.alice.call('shutdown_channel', {
      channel_id: ch.channel_id,
      close_script: {
        code_hash: '0x9bd7e06f3ecf4be0f2fcd2188b23f1b9fcc88e5d4b65a8637b17723bbda3cce8',
        hash_type: 'type',
        args: info.alice.wallet_lock_args,
      },
      fee_rate: '0x3e8',
    });
    const closed = await until('CLOSED', async () => {
      const r = await rpc.alice.call('list_channels', { peer_id: info.bob.peer_id, include_closed: true });
      return r.channels.find((c: { state: { state_name: string } }) => c.state.state_name === 'CLOSED');
    });
    expect(closed.enabled).toBe(false);
    const logged = await until('channel_closed in the log', async () => {
      const found = events('alice', 'channel_closed');
      return found.length ? found : undefined;
    });
    expect(logged[0]!.channel_id).toBe(ch.channel_id);
    const scraped = await scrape('alice');
    expect(sample(scraped, 'strand_channels', { state: 'CLOSED' })).toBe(1);
  });
});
