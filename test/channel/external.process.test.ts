/**
 * External funding with real processes: a `strand devchain` and three `strand node`s over JSON-RPC.
 * A key that is no node's wallet (funded by the chain's faucet) pays A's 500 CKB: A opens with
 * `open_channel_with_external_funding`, the tx is signed with the dev `sign_external_funding_tx`
 * and submitted; CHANNEL_READY with 438/188, a payment, a cooperative close paying A's side to the
 * shutdown script given at open. Node C (a 4 s `external_funding_timeout_seconds`) shows the
 * timeouts: a peer that never accepts, and a frozen tx never signed — both aborted, nothing spent.
 */
import { randomBytes } from 'node:crypto';
import { ccc } from '@ckb-ccc/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sighashLock } from '../../src/chain/address.ts';
import { type ChainClient, createChainClient, scriptToJson } from '../../src/chain/client.ts';
import { shutdownTxSize } from '../../src/channel/tx.ts';
import { bytesToHex } from '../../src/codec/hex.ts';
import { ckbHash } from '../../src/crypto/hash.ts';
import { lockArgsOf } from '../../src/crypto/secp256k1.ts';
import type { NodeProcess } from '../helpers/node-process.ts';
import { CKB, type DevchainProcess, rpc, startChannelNode, startDevchain, until } from './process-helpers.ts';

const hex = (v: bigint) => `0x${v.toString(16)}`;
const toCcc = (s: { code_hash: string; hash_type: string; args: string }) =>
  ccc.Script.from({ codeHash: s.code_hash, hashType: s.hash_type as ccc.HashType, args: s.args });

let chain: DevchainProcess;
let client: ChainClient;
let a: NodeProcess;
let b: NodeProcess;
let c: NodeProcess;
let aInfo: any;
let bInfo: any;
let cInfo: any;
/** The external funder: a fresh key, no node's wallet. */
const funderKey = new Uint8Array(randomBytes(32));
const funderLock = scriptToJson(sighashLock(bytesToHex(lockArgsOf(funderKey))));
/** Where A's side goes at close: a lock of the funder's choosing. */
let closeLock: { code_hash: string; hash_type: string; args: string };
let udt: { code_hash: string; hash_type: string; args: string };

const err = async (node: NodeProcess, m: string, p: unknown) => (await node.call(m, [p])).error?.message;

async function funderCells(): Promise<{ outPoints: string[]; capacity: bigint }> {
  const page = await client.getCells({ script: funderLock, script_type: 'lock' }, 'asc', 100);
  return {
    outPoints: page.objects.map((o) => `${o.out_point.tx_hash}:${Number(o.out_point.index)}`).sort(),
    capacity: page.objects.reduce((s, o) => s + BigInt(o.output.capacity), 0n),
  };
}

async function link(from: NodeProcess, to: NodeProcess, toInfo: any, fromInfo: any) {
  await rpc(from, 'connect_peer', { address: toInfo.addresses[0] });
  await until(
    'peers connected',
    () => rpc(to, 'list_peers', undefined),
    (r) => r.peers.some((p: any) => p.pubkey === fromInfo.pubkey),
  );
}

beforeAll(async () => {
  chain = await startDevchain([1, 2, 3], 5000, 200, undefined, 1000);
  client = createChainClient({ rpcUrl: chain.url });
  const scripts = await client.call<any>('get_dev_scripts');
  udt = scripts.test_udt.script;
  const whitelist = {
    udt_whitelist: [
      { name: 'TEST', script: udt, cell_deps: scripts.test_udt.cell_deps, auto_accept_amount: 1 },
    ],
  };
  // A never auto-accepts CKB channels; B accepts with 250 CKB (a UDT one with its reserve); C gives
  // up on external funding after 4 s.
  a = await startChannelNode(
    1,
    chain.url,
    { open_channel_auto_accept_min_ckb_funding_amount: Number(100_000n * CKB) },
    undefined,
    whitelist,
  );
  b = await startChannelNode(
    2,
    chain.url,
    { auto_accept_channel_ckb_funding_amount: Number(250n * CKB) },
    undefined,
    whitelist,
  );
  c = await startChannelNode(3, chain.url, { external_funding_timeout_seconds: 4 });
  [aInfo, bInfo, cInfo] = await Promise.all([a, b, c].map((n) => rpc(n, 'node_info', undefined)));
  await link(a, b, bInfo, aInfo);
  await link(c, a, aInfo, cInfo);
  await link(c, b, bInfo, cInfo);
  await client.call('faucet', [funderLock, hex(1000n * CKB)]);
  await until('funder funded', funderCells, (x) => x.capacity === 1000n * CKB);
  closeLock = { ...aInfo.default_funding_lock_script, args: `0x${'ee'.repeat(20)}` };
}, 180_000);

afterAll(async () => {
  if (process.env.DEBUG_CH)
    console.log(
      a?.output().slice(-3000),
      '\n-----\n',
      b?.output().slice(-3000),
      '\n-----\n',
      c?.output().slice(-3000),
    );
  await Promise.all([a?.stop(), b?.stop(), c?.stop()]);
  await chain?.stop();
});

describe('open_channel_with_external_funding → sign_external_funding_tx → submit_signed_funding_tx', () => {
  let channelId: string;
  let unsigned: any;

  it('refuses bad input: unknown peer, missing funding lock script', async () => {
    const stranger = `02${'11'.repeat(32)}`;
    const base = {
      funding_amount: hex(500n * CKB),
      shutdown_script: funderLock,
      funding_lock_script: funderLock,
      public: false,
    };
    expect(await err(a, 'open_channel_with_external_funding', { ...base, pubkey: stranger })).toBe(
      `Invalid parameter: Peer Pubkey(${stranger}) is not connected`,
    );
    const missing = await a.call('open_channel_with_external_funding', [
      { pubkey: bInfo.pubkey, funding_amount: hex(500n * CKB), shutdown_script: funderLock },
    ]);
    expect(missing.error?.code).toBe(-32602);
    expect(missing.error?.message).toMatch(/funding_lock_script/);
    expect((await rpc(a, 'list_channels', { include_closed: true })).channels).toHaveLength(0);
  });

  it('returns the frozen unsigned tx once B accepted: 750 CKB funding cell, the funder pays A’s part', async () => {
    const r = await rpc(a, 'open_channel_with_external_funding', {
      pubkey: bInfo.pubkey,
      funding_amount: hex(500n * CKB),
      public: false,
      shutdown_script: closeLock,
      funding_lock_script: funderLock,
    });
    channelId = r.channel_id;
    unsigned = r.unsigned_funding_tx;
    expect(channelId).toMatch(/^0x[0-9a-f]{64}$/);
    expect(BigInt(unsigned.outputs[0].capacity)).toBe(750n * CKB);
    const funderOut = unsigned.outputs.find((o: any) => o.lock.args === funderLock.args);
    expect(BigInt(funderOut.capacity)).toBeLessThan(500n * CKB);
    const ca = (await rpc(a, 'list_channels', {})).channels[0];
    expect(ca.channel_id).toBe(channelId);
    expect(ca.state).toEqual({
      state_name: 'NEGOTIATING_FUNDING',
      state_flags: ['AWAITING_EXTERNAL_FUNDING'],
    });
    const cb = await until(
      'B waiting too',
      () => rpc(b, 'list_channels', { pubkey: aInfo.pubkey }),
      (x) => x.channels[0]?.state.state_flags[0] === 'AWAITING_EXTERNAL_FUNDING',
    );
    expect(cb.channels[0].channel_id).toBe(channelId);
  }, 60_000);

  it('refuses a wrong, unsigned or misaddressed submission, changing nothing', async () => {
    const { signed_funding_tx: signed } = await rpc(a, 'sign_external_funding_tx', {
      unsigned_funding_tx: unsigned,
      private_key: bytesToHex(funderKey),
    });
    const unknown = `0x${'ab'.repeat(32)}`;
    expect(await err(a, 'submit_signed_funding_tx', { channel_id: unknown, signed_funding_tx: signed })).toBe(
      `Channel not found error: Hash256(${unknown})`,
    );
    const other = structuredClone(signed);
    other.outputs[1].capacity = hex(BigInt(other.outputs[1].capacity) - 1n);
    expect(
      await err(a, 'submit_signed_funding_tx', { channel_id: channelId, signed_funding_tx: other }),
    ).toBe(
      'Invalid parameter: Signed funding transaction raw data mismatch; only witnesses may change for external funding',
    );
    expect(
      await err(a, 'submit_signed_funding_tx', { channel_id: channelId, signed_funding_tx: unsigned }),
    ).toBe('Invalid parameter: Signed funding transaction has no witness for the funding inputs');
    const bad = await a.call('submit_signed_funding_tx', [
      { channel_id: channelId, signed_funding_tx: { version: '0x0' } },
    ]);
    expect(bad.error?.code).toBe(-32602);
    const ca = (await rpc(a, 'list_channels', {})).channels[0];
    expect(ca.state.state_flags).toEqual(['AWAITING_EXTERNAL_FUNDING']);
  });

  it('submitted once (twice is refused): CHANNEL_READY with 438/188 and 750 CKB on chain', async () => {
    const { signed_funding_tx: signed } = await rpc(a, 'sign_external_funding_tx', {
      unsigned_funding_tx: unsigned,
      private_key: bytesToHex(funderKey),
    });
    const r = await rpc(a, 'submit_signed_funding_tx', { channel_id: channelId, signed_funding_tx: signed });
    expect(r.channel_id).toBe(channelId);
    expect(r.funding_tx_hash).toMatch(/^0x[0-9a-f]{64}$/);
    expect(
      await err(a, 'submit_signed_funding_tx', { channel_id: channelId, signed_funding_tx: signed }),
    ).toBe('Repeated processing message: Signed funding tx has already been submitted');
    const ready = (x: any) => x.channels[0]?.state.state_name === 'CHANNEL_READY';
    const ca = (await until('A ready', () => rpc(a, 'list_channels', {}), ready)).channels[0];
    const cb = (await until('B ready', () => rpc(b, 'list_channels', { pubkey: aInfo.pubkey }), ready))
      .channels[0];
    expect([ca.local_balance, ca.remote_balance]).toEqual([hex(438n * CKB), hex(188n * CKB)]);
    expect([cb.local_balance, cb.remote_balance]).toEqual([hex(188n * CKB), hex(438n * CKB)]);
    expect(ca.channel_outpoint).toBe(`${r.funding_tx_hash}00000000`);
    const cell = (await client.getLiveCell({ txHash: r.funding_tx_hash, index: 0 }, false)) as any;
    expect(BigInt(cell.cell.output.capacity)).toBe(750n * CKB);
    // The funder kept exactly its change: 1000 CKB − 500 − the fee of its part.
    const change = unsigned.outputs.find((o: any) => o.lock.args === funderLock.args);
    expect((await funderCells()).capacity).toBe(BigInt(change.capacity));
    expect(1000n * CKB - 500n * CKB - BigInt(change.capacity)).toBeLessThan(CKB / 100n);
  }, 90_000);

  it('pays 100 CKB over the channel, then closes cooperatively: 400 − fee to the shutdown script, 350 to B', async () => {
    const preimage = `0x${'5a'.repeat(32)}`;
    const paymentHash = ccc.hexFrom(ckbHash(ccc.bytesFrom(preimage)));
    await rpc(a, 'add_tlc', {
      channel_id: channelId,
      amount: hex(100n * CKB),
      payment_hash: paymentHash,
      expiry: hex(BigInt(Date.now() + 3_600_000)),
    });
    await until(
      'TLC at B',
      () => rpc(b, 'list_channels', { pubkey: aInfo.pubkey }),
      (x) => x.channels[0]?.pending_tlcs[0]?.status?.Inbound === 'Committed',
    );
    await rpc(b, 'remove_tlc', {
      channel_id: channelId,
      tlc_id: '0x0',
      reason: { payment_preimage: preimage },
    });
    const paid = (x: any) =>
      x.channels[0]?.pending_tlcs.length === 0 && x.channels[0]?.local_balance === hex(338n * CKB);
    await until('A paid', () => rpc(a, 'list_channels', {}), paid);
    await until(
      'B settled',
      () => rpc(b, 'list_channels', { pubkey: aInfo.pubkey }),
      (x) => x.channels[0]?.pending_tlcs.length === 0 && x.channels[0]?.local_balance === hex(288n * CKB),
    );
    await new Promise((r) => setTimeout(r, 500));
    await until(
      'shutdown accepted',
      () => a.call('shutdown_channel', [{ channel_id: channelId }]),
      (x) => !x.error,
      20_000,
    );
    const closed = (x: any) => x.channels[0]?.state.state_name === 'CLOSED';
    const ca = (await until('A closed', () => rpc(a, 'list_channels', { include_closed: true }), closed))
      .channels[0];
    await until(
      'B closed',
      () => rpc(b, 'list_channels', { pubkey: aInfo.pubkey, include_closed: true }),
      closed,
    );
    expect(ca.state.state_flags).toEqual(['COOPERATIVE']);
    const tx = (await client.getTransaction(ca.shutdown_transaction_hash)) as any;
    const outputs = tx.transaction.outputs as { capacity: string; lock: { args: string } }[];
    const toA = outputs.find((o) => o.lock.args === closeLock.args)!;
    const toB = outputs.find((o) => o.lock.args === bInfo.default_funding_lock_script.args)!;
    expect(BigInt(toB.capacity)).toBe(350n * CKB);
    expect(400n * CKB - BigInt(toA.capacity)).toBe(
      BigInt(shutdownTxSize(1, [toCcc(closeLock), toCcc(bInfo.default_funding_lock_script)])),
    );
  }, 90_000);
});

describe('an externally funded UDT channel', () => {
  it('the funder pays the tokens and A’s reserve; at close the tokens go to the shutdown script', async () => {
    const tokens = async () => {
      const page = await client.getCells(
        { script: funderLock, script_type: 'lock', filter: { script: udt }, with_data: true },
        'asc',
        100,
      );
      return page.objects.map((o: any) => ccc.numLeFromBytes(ccc.bytesFrom(o.output_data)));
    };
    await client.call('faucet', [funderLock, hex(300n * CKB), hex(1000n)]);
    await until('funder has tokens', tokens, (x) => x.length === 1);
    const r = await rpc(a, 'open_channel_with_external_funding', {
      pubkey: bInfo.pubkey,
      funding_amount: hex(600n),
      funding_udt_type_script: udt,
      public: false,
      shutdown_script: closeLock,
      funding_lock_script: funderLock,
    });
    const { signed_funding_tx: signed } = await rpc(a, 'sign_external_funding_tx', {
      unsigned_funding_tx: r.unsigned_funding_tx,
      private_key: bytesToHex(funderKey),
    });
    await rpc(a, 'submit_signed_funding_tx', { channel_id: r.channel_id, signed_funding_tx: signed });
    const mine = (x: any) => x.channels.find((ch: any) => ch.channel_id === r.channel_id);
    const ca = mine(
      await until(
        'A ready',
        () => rpc(a, 'list_channels', {}),
        (x) => mine(x)?.state.state_name === 'CHANNEL_READY',
      ),
    );
    await until(
      'B ready',
      () => rpc(b, 'list_channels', {}),
      (x) => mine(x)?.state.state_name === 'CHANNEL_READY',
    );
    expect([ca.local_balance, ca.remote_balance]).toEqual([hex(600n), '0x0']);
    const cell = (await client.getLiveCell(
      { txHash: ca.channel_outpoint.slice(0, 66), index: 0 },
      true,
    )) as any;
    expect(ccc.numLeFromBytes(ccc.bytesFrom(cell.cell.data.content))).toBe(600n);
    // The funder's token change: 1000 − 600.
    expect(await tokens()).toEqual([400n]);
    await until(
      'shutdown accepted',
      () => a.call('shutdown_channel', [{ channel_id: r.channel_id }]),
      (x) => !x.error,
      20_000,
    );
    const closed = mine(
      await until(
        'A closed',
        () => rpc(a, 'list_channels', { include_closed: true }),
        (x) => mine(x)?.state.state_name === 'CLOSED',
      ),
    );
    const tx = (await client.getTransaction(closed.shutdown_transaction_hash)) as any;
    const i = tx.transaction.outputs.findIndex((o: any) => o.lock.args === closeLock.args);
    expect(tx.transaction.outputs[i].type).toEqual(udt);
    expect(ccc.numLeFromBytes(ccc.bytesFrom(tx.transaction.outputs_data[i]))).toBe(600n);
  }, 90_000);
});

describe('external funding timeouts (C: external_funding_timeout_seconds 4)', () => {
  const open = (peer: any) =>
    c.call('open_channel_with_external_funding', [
      {
        pubkey: peer.pubkey,
        funding_amount: hex(300n * CKB),
        public: false,
        shutdown_script: funderLock,
        funding_lock_script: funderLock,
      },
    ]);

  it('a peer that never accepts: "Timeout waiting for unsigned funding tx", the opening aborted on both', async () => {
    const before = await funderCells();
    const r = await open(aInfo);
    expect(r.error?.message).toBe('Timeout waiting for unsigned funding tx');
    const cc = (await rpc(c, 'list_channels', { pubkey: aInfo.pubkey, include_closed: true })).channels[0];
    expect(cc.state).toEqual({ state_name: 'CLOSED', state_flags: ['FUNDING_ABORTED'] });
    await until(
      'A dropped it',
      () => rpc(a, 'list_channels', { pubkey: cInfo.pubkey, include_closed: true }),
      (x) => x.channels[0]?.state.state_name === 'CLOSED',
    );
    expect(await funderCells()).toEqual(before);
  }, 60_000);

  it('a frozen tx never signed: aborted with TxAbort on both sides, the funder’s cells untouched', async () => {
    const before = await funderCells();
    const r = await open(bInfo);
    expect(r.error).toBeUndefined();
    const id = r.result.channel_id;
    const aborted = (x: any) =>
      x.channels.find((ch: any) => ch.channel_id === id)?.state.state_name === 'CLOSED';
    const cc = (await until('C aborted', () => rpc(c, 'list_channels', { include_closed: true }), aborted))
      .channels;
    const mine = cc.find((ch: any) => ch.channel_id === id);
    expect(mine.state.state_flags).toEqual(['FUNDING_ABORTED']);
    expect(mine.failure_detail).toMatch(/external funding timed out/);
    const bl = await until(
      'B aborted',
      () => rpc(b, 'list_channels', { pubkey: cInfo.pubkey, include_closed: true }),
      aborted,
    );
    expect(bl.channels.find((ch: any) => ch.channel_id === id).state.state_flags).toEqual([
      'FUNDING_ABORTED',
    ]);
    const { signed_funding_tx: signed } = await rpc(c, 'sign_external_funding_tx', {
      unsigned_funding_tx: r.result.unsigned_funding_tx,
      private_key: bytesToHex(funderKey),
    });
    expect(await err(c, 'submit_signed_funding_tx', { channel_id: id, signed_funding_tx: signed })).toBe(
      'Invalid state: Expected channel in AWAITING_EXTERNAL_FUNDING-compatible state, but got Closed(FUNDING_ABORTED)',
    );
    expect(await funderCells()).toEqual(before);
  }, 60_000);
});
