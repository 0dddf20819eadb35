/**
 * Interop levels 3–5 with the reference node (fiber-js 0.8.1 in Chromium) on Strand's dev chain:
 * each side opens a channel to the other; both reach CHANNEL_READY and agree on the balances;
 * keysend payments go both ways; a cooperative close started by each side in turn commits a
 * closing transaction whose outputs pay each side its balance and reserve, the closer paying the
 * fee. (Level 6, force close and punishment, is in test/interop/README.md.)
 */
// biome-ignore-all lint/suspicious/noExplicitAny: RPC results are JSON read field by field here
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChainClient } from '../../src/chain/client.ts';
import { rpc } from '../channel/process-helpers.ts';
import { type FnnNetwork, startFnnNetwork } from './fnn-network.ts';
import { referenceAvailable } from './reference-node.ts';

const CKB = 100_000_000n;
const big = (h: string) => BigInt(h);
const hex = (n: bigint) => `0x${n.toString(16)}`;

async function until<T>(what: string, fn: () => Promise<T | undefined>, ms = 120_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 1000));
  }
}

describe.skipIf(!referenceAvailable())('channels with the reference node (levels 3–5)', () => {
  let net: FnnNetwork;
  beforeAll(async () => {
    net = await startFnnNetwork();
  }, 180_000);
  afterAll(async () => {
    await net?.stop();
  });

  /** Each side's record of a channel: the one with `id`, or else the one not closed. */
  const strandChannel = async (id?: string) =>
    ((await rpc(net.strand, 'list_channels', { include_closed: true })).channels as any[]).find((c) =>
      id ? c.channel_id === id : c.state.state_name !== 'CLOSED',
    );
  const refChannel = async (id?: string) =>
    ((await net.ref.call('list_channels', [{ include_closed: true }])).channels as any[]).find((c) =>
      id ? c.channel_id === id : c.state.state_name !== 'Closed',
    );

  /** Both sides ready on the channel, and what each holds in it. */
  async function bothReady() {
    return until('CHANNEL_READY on both sides', async () => {
      const s = await strandChannel();
      const r = await refChannel();
      if (s?.state.state_name !== 'CHANNEL_READY' || r?.state.state_name !== 'ChannelReady') return undefined;
      return { s, r };
    });
  }

  async function expectBalancesAgree() {
    const { s, r } = await bothReady();
    expect(big(s.local_balance)).toBe(big(r.remote_balance));
    expect(big(s.remote_balance)).toBe(big(r.local_balance));
    return { strand: big(s.local_balance), ref: big(r.local_balance), id: s.channel_id as string };
  }

  async function keysend(from: 'strand' | 'ref', amount: bigint) {
    const params = {
      target_pubkey: from === 'strand' ? net.refPubkey : net.strandPubkey,
      amount: hex(amount),
      keysend: true,
    };
    const get = (h: string) =>
      from === 'strand'
        ? rpc(net.strand, 'get_payment', { payment_hash: h })
        : net.ref.call('get_payment', [{ payment_hash: h }]);
    const sent: any =
      from === 'strand'
        ? await rpc(net.strand, 'send_payment', params)
        : await net.ref.call('send_payment', [params]);
    const done: any = await until(`${from}'s keysend`, async () => {
      const p: any = await get(sent.payment_hash);
      return p.status === 'Success' || p.status === 'Failed' ? p : undefined;
    });
    expect([done.status, done.failed_error ?? null]).toEqual(['Success', null]);
  }

  async function closeCooperatively(
    by: 'strand' | 'ref',
    id: string,
    before: { strand: bigint; ref: bigint },
  ) {
    if (by === 'strand') await rpc(net.strand, 'shutdown_channel', { channel_id: id });
    else await net.ref.call('shutdown_channel', [{ channel_id: id }]);
    const closed = await until('CLOSED on both sides', async () => {
      const s = await strandChannel(id);
      const r = await refChannel(id);
      if (s?.state.state_name !== 'CLOSED' || r?.state.state_name !== 'Closed') return undefined;
      return s;
    });
    expect(closed.state.state_flags).toContain('COOPERATIVE');
    // The closing transaction is on chain: one output each, balance + 99 CKB reserve, the closer
    // paying the fee from its own output.
    const chain = createChainClient({ rpcUrl: net.chainUrl });
    const tx: any = await until('the closing transaction committed', async () => {
      const t: any = await chain.call('get_transaction', [closed.shutdown_transaction_hash]);
      return t.tx_status.status === 'committed' ? t.transaction : undefined;
    });
    const caps = (tx.outputs as any[]).map((o) => big(o.capacity)).sort((a, b) => (a < b ? -1 : 1));
    const reserve = 99n * CKB;
    const want = [before.strand + reserve, before.ref + reserve];
    const [closerWant, otherWant] = by === 'strand' ? want : [want[1]!, want[0]!];
    expect(caps).toContain(otherWant);
    const closerGot = caps.find((c) => c !== otherWant)!;
    expect(closerGot).toBeLessThan(closerWant);
    expect(closerWant - closerGot).toBeLessThan(CKB); // a fee, not a loss
  }

  it('fiber-js opens to Strand: both ready, balances agree, keysend both ways, Strand closes cooperatively', async () => {
    await net.ref.call('open_channel', [
      { pubkey: net.strandPubkey, funding_amount: hex(500n * CKB), public: true },
    ]);
    const start = await expectBalancesAgree();
    expect(start.ref).toBe(401n * CKB); // 500 CKB less fnn's 99 CKB reserve
    await keysend('ref', 10n * CKB);
    await keysend('strand', 5n * CKB);
    const after = await expectBalancesAgree();
    expect([after.strand, after.ref]).toEqual([start.strand + 5n * CKB, start.ref - 5n * CKB]);
    await closeCooperatively('strand', after.id, after);
  }, 400_000);

  it('Strand opens to fiber-js: both ready, balances agree, keysend both ways, fiber-js closes cooperatively', async () => {
    await rpc(net.strand, 'open_channel', {
      pubkey: net.refPubkey,
      funding_amount: hex(500n * CKB),
      public: true,
    });
    const start = await expectBalancesAgree();
    expect(start.strand).toBe(401n * CKB); // with an fnn peer, fnn's reserve: 99 CKB
    await keysend('strand', 10n * CKB);
    await keysend('ref', 5n * CKB);
    const after = await expectBalancesAgree();
    expect([after.strand, after.ref]).toEqual([start.strand - 5n * CKB, start.ref + 5n * CKB]);
    await closeCooperatively('ref', after.id, after);
  }, 400_000);

  // Level 6, first half. Last: it stops fiber-js.
  it('Strand opens, fiber-js goes away, Strand force closes and has its funds back after the delay', async () => {
    await rpc(net.strand, 'open_channel', {
      pubkey: net.refPubkey,
      funding_amount: hex(500n * CKB),
      public: false,
    });
    const { strand: balance, id } = await expectBalancesAgree();
    await net.ref.close();
    await rpc(net.strand, 'shutdown_channel', { channel_id: id, force: true });
    const chain = createChainClient({ rpcUrl: net.chainUrl });
    await until('the commitment on chain', async () => {
      const s = await strandChannel(id);
      const t: any =
        s?.shutdown_transaction_hash && (await chain.call('get_transaction', [s.shutdown_transaction_hash]));
      return t?.tx_status.status === 'committed' ? t : undefined;
    });
    // The commitment delay (one epoch) passes at once on the dev chain.
    await chain.call('generate_epochs', ['0x2']);
    const closed = await until('settled after the commitment delay', async () => {
      const s = await strandChannel(id);
      return s?.state.state_name === 'CLOSED' && !s.state.state_flags.includes('WAITING_ONCHAIN_SETTLEMENT')
        ? s
        : undefined;
    });
    expect(closed.state.state_flags).toContain('UNCOOPERATIVE_LOCAL');
    // The commitment is on chain and its cell was spent: Strand's share went to its wallet, with
    // the settlement fee (well under 1 CKB) as the only cost beside the commitment's own fee.
    const commitment: any = await chain.call('get_transaction', [closed.shutdown_transaction_hash]);
    expect(commitment.tx_status.status).toBe('committed');
    // The settlement may still be in the pool when the channel says it is settled: wait for its block.
    const spent = await until('the commitment cell spent', async () => {
      const cell: any = await chain.call('get_live_cell', [
        { tx_hash: closed.shutdown_transaction_hash, index: '0x0' },
        false,
      ]);
      return cell.status === 'live' ? undefined : cell.status;
    });
    expect(spent).not.toBe('live');
    expect(balance).toBe(401n * CKB);
  }, 400_000);
});
