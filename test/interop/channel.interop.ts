/**
 * Interop levels 3–6 with the reference node (fiber-js 0.8.1 in Chromium) on Strand's dev chain:
 * each side opens a channel to the other; both reach CHANNEL_READY and agree on the balances;
 * keysend and invoice payments go both ways, and a second Strand node pays fiber-js through the
 * first; a cooperative close started by each side in turn commits a closing transaction whose
 * outputs pay each side its balance and reserve, the closer paying the fee; Strand force-closes
 * with fiber-js gone. (What of level 6 is not automated: test/interop/README.md.)
 */
// biome-ignore-all lint/suspicious/noExplicitAny: RPC results are JSON read field by field here
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChainClient } from '../../src/chain/client.ts';
import { rpc } from '../channel/process-helpers.ts';
import { type FnnNetwork, startFnnNetwork } from './fnn-network.ts';
import { big, CKB, explainFailures, hex, leAmount, until } from './interop-helpers.ts';
import { referenceAvailable } from './reference-node.ts';

describe.skipIf(!referenceAvailable())('channels with the reference node (levels 3–5)', () => {
  let net: FnnNetwork;
  explainFailures(
    () =>
      net && {
        ref: net.ref,
        strandOutputs: () => [
          { name: 'strand', text: net.strand.output() },
          { name: 'strand2', text: net.strand2.output() },
        ],
      },
  );
  beforeAll(async () => {
    net = await startFnnNetwork();
  }, 180_000);
  afterAll(async () => {
    if (process.env.DEBUG_INTEROP)
      console.log(net?.strand.output().slice(-6000), '\n--- fiber-js\n', net?.ref.logs.slice(-60).join('\n'));
    await net?.stop();
  });

  /** Each side's record of a channel: the one with `id`, or else the one with the other not closed. */
  const strandChannel = async (id?: string) =>
    ((await rpc(net.strand, 'list_channels', { include_closed: true })).channels as any[]).find((c) =>
      id ? c.channel_id === id : c.pubkey === net.refPubkey && c.state.state_name !== 'CLOSED',
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

  /** Waits for a payment's end at the payer; asserts it succeeded. */
  async function succeeded(from: 'strand' | 'strand2' | 'ref', hash: string) {
    const get = (): Promise<any> =>
      from === 'ref'
        ? net.ref.call('get_payment', [{ payment_hash: hash }])
        : rpc(from === 'strand' ? net.strand : net.strand2, 'get_payment', { payment_hash: hash });
    const done: any = await until(`${from}'s payment`, async () => {
      const p: any = await get();
      return p.status === 'Success' || p.status === 'Failed' ? p : undefined;
    });
    expect([done.status, done.failed_error ?? null]).toEqual(['Success', null]);
    return done;
  }

  /** `payee` issues an invoice for `amount`, `payer` pays it; both see it done (Success, Paid). */
  async function payInvoice(payer: 'strand' | 'ref', payee: 'strand' | 'ref', amount: bigint) {
    const params = { amount: hex(amount), currency: 'Fibd', description: `interop ${payer} pays ${payee}` };
    const inv: any =
      payee === 'strand'
        ? await rpc(net.strand, 'new_invoice', params)
        : await net.ref.call('new_invoice', [params]);
    const hash = inv.invoice.data.payment_hash as string;
    const sent: any =
      payer === 'strand'
        ? await rpc(net.strand, 'send_payment', { invoice: inv.invoice_address })
        : await net.ref.call('send_payment', [{ invoice: inv.invoice_address }]);
    expect(sent.payment_hash).toBe(hash);
    await succeeded(payer, hash);
    const status = async () =>
      payee === 'strand'
        ? (await rpc(net.strand, 'get_invoice', { payment_hash: hash })).status
        : ((await net.ref.call('get_invoice', [{ payment_hash: hash }])) as any).status;
    await until(`${payee}'s invoice paid`, async () => ((await status()) === 'Paid' ? true : undefined));
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
    await payInvoice('ref', 'strand', 3n * CKB);
    await payInvoice('strand', 'ref', 2n * CKB);
    const after = await expectBalancesAgree();
    expect([after.strand, after.ref]).toEqual([start.strand + 6n * CKB, start.ref - 6n * CKB]);
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

  it('a second Strand node pays a fiber-js invoice through the first (two hops, fiber-js last)', async () => {
    await rpc(net.strand, 'open_channel', {
      pubkey: net.refPubkey,
      funding_amount: hex(500n * CKB),
      public: true,
    });
    const { id: toRef } = await expectBalancesAgree();
    await rpc(net.strand2, 'open_channel', {
      pubkey: net.strandPubkey,
      funding_amount: hex(500n * CKB),
      public: true,
    });
    const hop1 = async () =>
      ((await rpc(net.strand2, 'list_channels', { pubkey: net.strandPubkey })).channels as any[])[0];
    await until('the first hop ready', async () =>
      (await hop1())?.state.state_name === 'CHANNEL_READY' ? true : undefined,
    );
    const before = {
      hop1: big((await hop1()).local_balance),
      hop2: big((await strandChannel(toRef)).local_balance),
    };
    const amount = 4n * CKB;
    const inv: any = await net.ref.call('new_invoice', [{ amount: hex(amount), currency: 'Fibd' }]);
    // The route needs the gossip of both channels at the payer: retry while it is on its way.
    const sent: any = await until('a route to fiber-js', async () => {
      try {
        return await rpc(net.strand2, 'send_payment', { invoice: inv.invoice_address });
      } catch (e) {
        if (/Failed to build route/.test((e as Error).message)) return undefined;
        throw e;
      }
    });
    const done = await succeeded('strand2', inv.invoice.data.payment_hash);
    const fee = big(done.fee);
    expect(fee).toBeGreaterThan(0n);
    await until("fiber-js's invoice paid", async () =>
      ((await net.ref.call('get_invoice', [{ payment_hash: sent.payment_hash }])) as any).status === 'Paid'
        ? true
        : undefined,
    );
    // The payer paid amount + fee; the forwarder kept the fee; fiber-js got the amount.
    expect(big((await hop1()).local_balance)).toBe(before.hop1 - amount - fee);
    const last = await expectBalancesAgree();
    expect(last.strand).toBe(before.hop2 - amount);
    await closeCooperatively('strand', toRef, last);
  }, 400_000);

  /**
   * A token channel opened by `opener` (600 tokens), keysend of tokens both ways, closed
   * cooperatively by the other side; each side's cell on chain holds exactly its tokens.
   */
  async function tokenChannelRoundTrip(opener: 'strand' | 'ref', token: 'udt' | 'xudt' = 'udt') {
    const script = net[token];
    const tokenChannel = async (node: 'strand' | 'ref') => {
      const all: any[] =
        node === 'strand'
          ? (await rpc(net.strand, 'list_channels', { pubkey: net.refPubkey })).channels
          : (await net.ref.call('list_channels', [{}])).channels;
      return all.find((c) => c.funding_udt_type_script && !/closed/i.test(c.state.state_name));
    };
    const open = {
      pubkey: opener === 'strand' ? net.refPubkey : net.strandPubkey,
      funding_amount: hex(600n),
      funding_udt_type_script: script,
      public: false,
    };
    if (opener === 'strand') await rpc(net.strand, 'open_channel', open);
    else await net.ref.call('open_channel', [open]);
    const ready = async () =>
      until('the token channel ready on both sides', async () => {
        const s = await tokenChannel('strand');
        const r = await tokenChannel('ref');
        return s?.state.state_name === 'CHANNEL_READY' && r?.state.state_name === 'ChannelReady'
          ? { s, r, strand: big(s.local_balance), ref: big(r.local_balance) }
          : undefined;
      });
    const start = await ready();
    expect(start.r.funding_udt_type_script).toEqual(script);
    expect(start.s.funding_udt_type_script).toEqual(script);
    expect([start.strand, start.ref]).toEqual(opener === 'strand' ? [600n, 0n] : [0n, 600n]);
    expect([big(start.s.remote_balance), big(start.r.remote_balance)]).toEqual([start.ref, start.strand]);
    const pay = async (from: 'strand' | 'ref', amount: bigint) => {
      const params = {
        target_pubkey: from === 'strand' ? net.refPubkey : net.strandPubkey,
        amount: hex(amount),
        keysend: true,
        udt_type_script: script,
      };
      const sent: any =
        from === 'strand'
          ? await rpc(net.strand, 'send_payment', params)
          : await net.ref.call('send_payment', [params]);
      await succeeded(from, sent.payment_hash);
    };
    const other = opener === 'strand' ? 'ref' : 'strand';
    await pay(opener, 100n);
    await pay(other, 40n);
    const after = await ready();
    const want = { [opener]: 540n, [other]: 60n } as Record<'strand' | 'ref', bigint>;
    expect([after.strand, after.ref]).toEqual([want.strand, want.ref]);
    expect([big(after.s.remote_balance), big(after.r.remote_balance)]).toEqual([want.ref, want.strand]);
    const id = after.s.channel_id as string;
    if (other === 'ref') await net.ref.call('shutdown_channel', [{ channel_id: id }]);
    else await rpc(net.strand, 'shutdown_channel', { channel_id: id });
    const closed = await until('the token channel CLOSED', async () => {
      const c = await strandChannel(id);
      return c?.state.state_name === 'CLOSED' ? c : undefined;
    });
    const chain = createChainClient({ rpcUrl: net.chainUrl });
    const tx: any = await until('the closing transaction committed', async () => {
      const t: any = await chain.call('get_transaction', [closed.shutdown_transaction_hash]);
      return t.tx_status.status === 'committed' ? t.transaction : undefined;
    });
    const tokensOf = (i: number) => leAmount(tx.outputs_data[i] as string);
    expect(tx.outputs.every((o: any) => o.type?.args === script.args)).toBe(true);
    expect([tokensOf(0), tokensOf(1)].sort((a, b) => (a < b ? -1 : 1))).toEqual([60n, 540n]);
  }

  it('Strand opens a token (UDT) channel to fiber-js: ready, token balances agree, keysend tokens both ways, fiber-js closes', async () => {
    await tokenChannelRoundTrip('strand');
  }, 400_000);

  it('fiber-js opens a token (UDT) channel to Strand: ready, token balances agree, keysend tokens both ways, Strand closes', async () => {
    await tokenChannelRoundTrip('ref');
  }, 400_000);

  it('Strand opens an xUDT channel to fiber-js (the standard of CKB tokens): the same round trip', async () => {
    await tokenChannelRoundTrip('strand', 'xudt');
  }, 400_000);

  it('fiber-js restarts on its database with a channel open: both ready again, keysend both ways, Strand closes', async () => {
    await rpc(net.strand, 'open_channel', {
      pubkey: net.refPubkey,
      funding_amount: hex(500n * CKB),
      public: false,
    });
    const start = await expectBalancesAgree();
    await keysend('strand', 7n * CKB);
    await net.ref.restart();
    // Reestablished with fnn after its restart: the same balances on both sides, and it pays.
    const back = await expectBalancesAgree();
    expect([back.id, back.strand, back.ref]).toEqual([
      start.id,
      start.strand - 7n * CKB,
      start.ref + 7n * CKB,
    ]);
    await keysend('ref', 4n * CKB);
    await keysend('strand', 1n * CKB);
    const after = await expectBalancesAgree();
    expect([after.strand, after.ref]).toEqual([back.strand + 3n * CKB, back.ref - 3n * CKB]);
    await closeCooperatively('strand', after.id, after);
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
