/**
 * Interop: externally funded channels with the reference node (fiber-js 0.8.1 in Chromium) on
 * Strand's dev chain (its own network, `fnn-network.ts`). A key that is no node's wallet, funded by
 * the chain's faucet, pays the opener's part; the test signs the frozen funding tx with it (Strand's
 * dev `sign_external_funding_tx`: sighash-all over the funder's inputs) and submits it.
 *
 * - Strand opens to fiber-js (`open_channel_with_external_funding` on Strand): both CHANNEL_READY
 *   with agreeing balances, a keysend each way, fiber-js closes cooperatively: the funder's share
 *   goes to the shutdown script given at open, fiber-js's to its wallet.
 * - fiber-js opens to Strand (fiber-js's `open_channel_with_external_funding`): the same round trip,
 *   Strand closing.
 * - the same both ways in the test UDT: the funder pays the tokens, token keysends each way, and its
 *   tokens end in a cell of the shutdown script.
 */
// biome-ignore-all lint/suspicious/noExplicitAny: RPC results are JSON read field by field here
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sighashLock } from '../../src/chain/address.ts';
import { createChainClient, scriptToJson } from '../../src/chain/client.ts';
import { bytesToHex } from '../../src/codec/hex.ts';
import { lockArgsOf } from '../../src/crypto/secp256k1.ts';
import { rpc } from '../channel/process-helpers.ts';
import { type FnnNetwork, startFnnNetwork } from './fnn-network.ts';
import { big, CKB, explainFailures, hex, leAmount, until } from './interop-helpers.ts';
import { referenceAvailable } from './reference-node.ts';

describe.skipIf(!referenceAvailable())('externally funded channels with the reference node', () => {
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
  /**
   * An external funder: a fresh key, no node's wallet, with 1,000 CKB from the faucet. One per case:
   * a frozen funding tx that was never broadcast keeps its inputs out of fnn's coin selection.
   */
  const newFunder = () => {
    const key = new Uint8Array(randomBytes(32));
    return { key, lock: scriptToJson(sighashLock(bytesToHex(lockArgsOf(key)))) };
  };
  type Funder = ReturnType<typeof newFunder>;
  /** Where the funder's share goes at close: a lock of the funder's choosing. */
  const closeLock = { ...newFunder().lock, args: `0x${'ee'.repeat(20)}` };

  beforeAll(async () => {
    net = await startFnnNetwork();
  }, 180_000);
  afterAll(async () => {
    if (process.env.DEBUG_INTEROP)
      console.log(net?.strand.output().slice(-8000), '\n--- fiber-js\n', net?.ref.logs.slice(-80).join('\n'));
    await net?.stop();
  });

  async function funderCapacity(f: Funder): Promise<bigint> {
    const chain = createChainClient({ rpcUrl: net.chainUrl });
    const page = await chain.getCells({ script: f.lock, script_type: 'lock' }, 'asc', 100);
    return page.objects.reduce((s, o) => s + BigInt(o.output.capacity), 0n);
  }

  async function funded(udt?: bigint): Promise<Funder> {
    const f = newFunder();
    const chain = createChainClient({ rpcUrl: net.chainUrl });
    await chain.call('faucet', [f.lock, hex(1000n * CKB), ...(udt ? [hex(udt)] : [])]);
    await until('the funder funded', async () =>
      (await funderCapacity(f)) >= 1000n * CKB ? true : undefined,
    );
    return f;
  }

  const strandChannel = async (id: string) =>
    ((await rpc(net.strand, 'list_channels', { include_closed: true })).channels as any[]).find(
      (c) => c.channel_id === id,
    );
  const refChannel = async (id: string) =>
    ((await net.ref.call('list_channels', [{ include_closed: true }])).channels as any[]).find(
      (c) => c.channel_id === id,
    );

  async function bothReady(id: string) {
    const { s, r } = await until('CHANNEL_READY on both sides', async () => {
      const s = await strandChannel(id);
      const r = await refChannel(id);
      if (s?.state.state_name !== 'CHANNEL_READY' || r?.state.state_name !== 'ChannelReady') return undefined;
      return { s, r };
    });
    expect(big(s.local_balance)).toBe(big(r.remote_balance));
    expect(big(s.remote_balance)).toBe(big(r.local_balance));
    return { strand: big(s.local_balance), ref: big(r.local_balance) };
  }

  async function keysend(from: 'strand' | 'ref', amount: bigint, udt?: FnnNetwork['udt']) {
    const params = {
      target_pubkey: from === 'strand' ? net.refPubkey : net.strandPubkey,
      amount: hex(amount),
      keysend: true,
      ...(udt ? { udt_type_script: udt } : {}),
    };
    const get = (h: string): Promise<any> =>
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

  /** Closes cooperatively; returns the committed closing tx. */
  async function close(by: 'strand' | 'ref', id: string) {
    if (by === 'strand') await rpc(net.strand, 'shutdown_channel', { channel_id: id });
    else await net.ref.call('shutdown_channel', [{ channel_id: id }]);
    const closed = await until('CLOSED on both sides', async () => {
      const s = await strandChannel(id);
      const r = await refChannel(id);
      return s?.state.state_name === 'CLOSED' && r?.state.state_name === 'Closed' ? s : undefined;
    });
    expect(closed.state.state_flags).toContain('COOPERATIVE');
    const chain = createChainClient({ rpcUrl: net.chainUrl });
    return until('the closing transaction committed', async () => {
      const t: any = await chain.call('get_transaction', [closed.shutdown_transaction_hash]);
      return t.tx_status.status === 'committed' ? t.transaction : undefined;
    });
  }

  /** Signs a frozen funding tx with the funder's key (every input of the funder's lock). */
  async function sign(f: Funder, unsigned: unknown) {
    const { signed_funding_tx } = await rpc(net.strand, 'sign_external_funding_tx', {
      unsigned_funding_tx: unsigned,
      private_key: bytesToHex(f.key),
    });
    return signed_funding_tx;
  }

  const refWalletLock = async () => ((await net.ref.call('node_info')) as any).default_funding_lock_script;
  const strandWalletLock = async () =>
    (await rpc(net.strand, 'node_info', undefined)).default_funding_lock_script;

  it('Strand opens with external funding to fiber-js: ready, keysend both ways, fiber-js closes; the funder’s share to the shutdown script', async () => {
    const funder = await funded();
    const before = await funderCapacity(funder);
    const r = await rpc(net.strand, 'open_channel_with_external_funding', {
      pubkey: net.refPubkey,
      funding_amount: hex(500n * CKB),
      public: false,
      shutdown_script: closeLock,
      funding_lock_script: funder.lock,
    });
    const id = r.channel_id as string;
    const unsigned = r.unsigned_funding_tx;
    const change = (unsigned.outputs as any[]).find((o) => o.lock.args === funder.lock.args);
    expect(before - 500n * CKB - big(change.capacity)).toBeLessThan(CKB / 100n); // the fee of its part
    const sub = await rpc(net.strand, 'submit_signed_funding_tx', {
      channel_id: id,
      signed_funding_tx: await sign(funder, unsigned),
    });
    expect(sub.channel_id).toBe(id);
    const start = await bothReady(id);
    expect(start.strand).toBe(401n * CKB); // 500 CKB less fnn's 99 CKB reserve
    // The funding cell is on chain, and the funder kept exactly its change.
    const chain = createChainClient({ rpcUrl: net.chainUrl });
    const cell: any = await chain.call('get_live_cell', [
      { tx_hash: sub.funding_tx_hash, index: '0x0' },
      false,
    ]);
    expect(cell.status).toBe('live');
    expect(await funderCapacity(funder)).toBe(big(change.capacity));
    await keysend('strand', 10n * CKB);
    await keysend('ref', 4n * CKB);
    const after = await bothReady(id);
    expect([after.strand, after.ref]).toEqual([start.strand - 6n * CKB, start.ref + 6n * CKB]);
    const tx: any = await close('ref', id);
    const outputs = tx.outputs as any[];
    const reserve = 99n * CKB;
    const toFunder = outputs.find((o) => o.lock.args === closeLock.args);
    expect(toFunder).toBeDefined();
    expect(big(toFunder.capacity)).toBe(after.strand + reserve);
    const refLock = await refWalletLock();
    const refOut = outputs.find((o) => o.lock.args === refLock.args);
    expect(big(refOut.capacity)).toBeLessThan(after.ref + reserve);
    expect(after.ref + reserve - big(refOut.capacity)).toBeLessThan(CKB); // fiber-js closed: its fee
  }, 400_000);

  it('fiber-js opens with external funding to Strand: ready, keysend both ways, Strand closes; the funder’s share to the shutdown script', async () => {
    const funder = await funded();
    const before = await funderCapacity(funder);
    const r: any = await net.ref.call('open_channel_with_external_funding', [
      {
        pubkey: net.strandPubkey,
        funding_amount: hex(500n * CKB),
        public: false,
        shutdown_script: closeLock,
        funding_lock_script: funder.lock,
      },
    ]);
    const id = r.channel_id as string;
    const unsigned = r.unsigned_funding_tx;
    const change = (unsigned.outputs as any[]).find((o) => o.lock.args === funder.lock.args);
    expect(before - 500n * CKB - big(change.capacity)).toBeLessThan(CKB / 100n);
    await until('Strand waiting for the signed tx', async () => {
      const c = await strandChannel(id);
      return c?.state.state_flags.includes('AWAITING_EXTERNAL_FUNDING') ? c : undefined;
    });
    const sub: any = await net.ref.call('submit_signed_funding_tx', [
      { channel_id: id, signed_funding_tx: await sign(funder, unsigned) },
    ]);
    expect(sub.channel_id).toBe(id);
    const start = await bothReady(id);
    expect(start.ref).toBe(401n * CKB);
    expect(await funderCapacity(funder)).toBe(big(change.capacity));
    await keysend('ref', 10n * CKB);
    await keysend('strand', 4n * CKB);
    const after = await bothReady(id);
    expect([after.strand, after.ref]).toEqual([start.strand + 6n * CKB, start.ref - 6n * CKB]);
    const tx: any = await close('strand', id);
    const outputs = tx.outputs as any[];
    const reserve = 99n * CKB;
    const toFunder = outputs.find((o) => o.lock.args === closeLock.args);
    expect(toFunder).toBeDefined();
    expect(big(toFunder.capacity)).toBe(after.ref + reserve);
    const sLock = await strandWalletLock();
    const strandOut = outputs.find((o) => o.lock.args === sLock.args);
    expect(after.strand + reserve - big(strandOut.capacity)).toBeLessThan(CKB);
  }, 400_000);

  /**
   * An externally funded channel in the test UDT opened by `opener`: the funder pays 600 tokens
   * (and the opener's CKB), the token balances agree, tokens go each way by keysend, the other side
   * closes, and the funder's tokens end in a cell of the shutdown script given at open.
   */
  async function udtRoundTrip(opener: 'strand' | 'ref') {
    const funder = await funded(1000n);
    const params = {
      pubkey: opener === 'strand' ? net.refPubkey : net.strandPubkey,
      funding_amount: hex(600n),
      funding_udt_type_script: net.udt,
      public: false,
      shutdown_script: closeLock,
      funding_lock_script: funder.lock,
    };
    const r: any =
      opener === 'strand'
        ? await rpc(net.strand, 'open_channel_with_external_funding', params)
        : await net.ref.call('open_channel_with_external_funding', [params]);
    const id = r.channel_id as string;
    const tokenOut = (r.unsigned_funding_tx.outputs as any[]).findIndex(
      (o, i) => i > 0 && o.lock.args === funder.lock.args && o.type?.args === net.udt.args,
    );
    expect(leAmount(r.unsigned_funding_tx.outputs_data[tokenOut])).toBe(400n); // the funder's token change
    if (opener === 'ref')
      await until('Strand waiting for the signed tx', async () => {
        const c = await strandChannel(id);
        return c?.state.state_flags.includes('AWAITING_EXTERNAL_FUNDING') ? c : undefined;
      });
    const submit = { channel_id: id, signed_funding_tx: await sign(funder, r.unsigned_funding_tx) };
    if (opener === 'strand') await rpc(net.strand, 'submit_signed_funding_tx', submit);
    else await net.ref.call('submit_signed_funding_tx', [submit]);
    const start = await bothReady(id);
    expect([start.strand, start.ref]).toEqual(opener === 'strand' ? [600n, 0n] : [0n, 600n]);
    const other = opener === 'strand' ? 'ref' : 'strand';
    await keysend(opener, 100n, net.udt);
    await keysend(other, 40n, net.udt);
    const after = await bothReady(id);
    const want = { [opener]: 540n, [other]: 60n } as Record<'strand' | 'ref', bigint>;
    expect([after.strand, after.ref]).toEqual([want.strand, want.ref]);
    const tx: any = await close(other, id);
    const i = (tx.outputs as any[]).findIndex((o) => o.lock.args === closeLock.args);
    expect(i).toBeGreaterThanOrEqual(0);
    expect(tx.outputs[i].type).toEqual(net.udt);
    expect(leAmount(tx.outputs_data[i])).toBe(540n);
    const j = 1 - i;
    expect(tx.outputs[j].type).toEqual(net.udt);
    expect(leAmount(tx.outputs_data[j])).toBe(60n);
  }

  it('Strand opens an externally funded UDT channel to fiber-js: tokens from the funder, keysend tokens both ways, fiber-js closes', async () => {
    await udtRoundTrip('strand');
  }, 400_000);

  it('fiber-js opens an externally funded UDT channel to Strand: the same round trip, Strand closes', async () => {
    await udtRoundTrip('ref');
  }, 400_000);
});
