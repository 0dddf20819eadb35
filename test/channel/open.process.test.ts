/**
 * The seed's acceptance of channel opening, with real processes: a `strand devchain` and two
 * `strand node`s driven over JSON-RPC. 500 CKB opened, the peer auto-accepting with 250:
 * CHANNEL_READY on both, 438/188 and 188/438, a 750-CKB funding cell on chain.
 */

import { ccc } from '@ckb-ccc/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChainClient } from '../../src/chain/client.ts';
import { shutdownTxSize } from '../../src/channel/tx.ts';
import { ckbHash } from '../../src/crypto/hash.ts';
import type { NodeProcess } from '../helpers/node-process.ts';
import {
  CKB,
  connect,
  type DevchainProcess,
  rpc,
  startChannelNode,
  startDevchain,
  until,
} from './process-helpers.ts';

const hex = (v: bigint) => `0x${v.toString(16)}`;
const toCcc = (s: { code_hash: string; hash_type: string; args: string }) =>
  ccc.Script.from({ codeHash: s.code_hash, hashType: s.hash_type as ccc.HashType, args: s.args });
let chain: DevchainProcess;
let a: NodeProcess;
let b: NodeProcess;
let bInfo: any;
let aInfo: any;

beforeAll(async () => {
  chain = await startDevchain([1, 2]);
  a = await startChannelNode(1, chain.url);
  b = await startChannelNode(2, chain.url, { auto_accept_channel_ckb_funding_amount: Number(250n * CKB) });
  ({ aInfo, bInfo } = await connect(a, b));
}, 120_000);

afterAll(async () => {
  if (process.env.DEBUG_CH) console.log(a?.output().slice(-3000), '\n-----\n', b?.output().slice(-3000));
  await a?.stop();
  await b?.stop();
  await chain?.stop();
});

const bPeerId = () => bInfo.addresses[0].split('/p2p/')[1] as string;

describe('open_channel between two nodes on the dev chain', () => {
  it('opens 500 CKB, auto-accepted with 250: CHANNEL_READY, 438/188 and 188/438, 750 CKB on chain', async () => {
    const r = await rpc(a, 'open_channel', {
      peer_id: bPeerId(),
      funding_amount: hex(500n * CKB),
      public: false,
    });
    expect(r.temporary_channel_id).toMatch(/^0x[0-9a-f]{64}$/);
    const listA = await until(
      'A ready',
      () => rpc(a, 'list_channels', { peer_id: bPeerId() }),
      (x) => x.channels[0]?.state.state_name === 'CHANNEL_READY',
    );
    const listB = await until(
      'B ready',
      () => rpc(b, 'list_channels', { pubkey: aInfo.pubkey }),
      (x) => x.channels[0]?.state.state_name === 'CHANNEL_READY',
    );
    const ca = listA.channels[0];
    const cb = listB.channels[0];
    expect(ca.channel_id).toBe(cb.channel_id);
    expect(ca.channel_id).not.toBe(r.temporary_channel_id);
    expect([ca.local_balance, ca.remote_balance]).toEqual([hex(438n * CKB), hex(188n * CKB)]);
    expect([cb.local_balance, cb.remote_balance]).toEqual([hex(188n * CKB), hex(438n * CKB)]);
    expect(ca.state.state_flags).toEqual([]);
    expect(ca.peer_id).toBe(bPeerId());
    expect(ca.pubkey).toBe(bInfo.pubkey);
    expect(cb.is_acceptor).toBe(true);
    expect(ca.channel_outpoint).toBe(cb.channel_outpoint);
    // The funding cell on chain holds both fundings: 750 CKB under the funding lock.
    const client = createChainClient({ rpcUrl: chain.url });
    const op = ca.channel_outpoint as string;
    const cell = (await client.getLiveCell({ txHash: op.slice(0, 66), index: 0 }, false)) as any;
    expect(cell.status).toBe('live');
    expect(BigInt(cell.cell.output.capacity)).toBe(750n * CKB);
    const info = await rpc(a, 'node_info', undefined);
    expect(info.channel_count).toBe('0x1');
    expect(info.pending_channel_count).toBe('0x0');
  }, 90_000);

  it('refuses bad input with clear errors', async () => {
    const err = async (node: NodeProcess, m: string, p: unknown) => (await node.call(m, [p])).error?.message;
    const stranger = '02' + '11'.repeat(32);
    expect(await err(a, 'open_channel', { pubkey: stranger, funding_amount: hex(500n * CKB) })).toMatch(
      /^Invalid parameter: Peer Pubkey\(0211.*\)'s feature not found, waiting for peer to send Init message$/,
    );
    expect(await err(a, 'open_channel', { peer_id: bPeerId(), funding_amount: hex(61n * CKB) })).toBe(
      `Invalid parameter: The funding amount (${61n * CKB}) should be greater than or equal to ${98n * CKB}`,
    );
    const unknown = `0x${'ab'.repeat(32)}`;
    expect(await err(a, 'abandon_channel', { channel_id: unknown })).toBe(
      `Invalid parameter: Channel Hash256(${unknown}) not found`,
    );
    expect(
      await err(b, 'accept_channel', { temporary_channel_id: unknown, funding_amount: hex(100n * CKB) }),
    ).toBe(`Invalid parameter: No channel with temp id Hash256(${unknown}) found`);
    expect(await err(a, 'list_channels', { only_pending: true, include_closed: true })).toMatch(
      /mutually exclusive/,
    );
    const ready = (await rpc(a, 'list_channels', {})).channels[0];
    expect(await err(a, 'abandon_channel', { channel_id: ready.channel_id })).toBe(
      `Invalid parameter: Channel Hash256(${ready.channel_id}) is in state ChannelReady, cannot be abandoned, please shutdown the channel instead`,
    );
    expect(await err(a, 'open_channel', { peer_id: bPeerId(), funding_amount: '0x1', one_way: true })).toBe(
      'Invalid parameter: An one-way channel cannot be public',
    );
  });
});

describe('TLCs through the dev module', () => {
  it('add_tlc and remove_tlc (fulfil, then fail) move the balances on both sides', async () => {
    const ca = (await rpc(a, 'list_channels', {})).channels[0];
    const preimage = `0x${'42'.repeat(32)}`;
    const paymentHash = ccc.hexFrom(ckbHash(ccc.bytesFrom(preimage)));
    const expiry = hex(BigInt(Date.now() + 3_600_000));
    // More than the local balance: fnn's answer is the TlcErr its TlcAmountExceedLimit maps to.
    const over = await a.call('add_tlc', [
      {
        channel_id: ca.channel_id,
        amount: hex(BigInt(ca.local_balance) + 1n),
        payment_hash: paymentHash,
        expiry,
      },
    ]);
    expect(over.error).toMatchObject({ code: -32000, message: 'TemporaryChannelFailure' });
    const add = await rpc(a, 'add_tlc', {
      channel_id: ca.channel_id,
      amount: hex(100n * CKB),
      payment_hash: paymentHash,
      expiry,
    });
    expect(add.tlc_id).toBe('0x0');
    const withTlc = await until(
      'TLC committed at B',
      () => rpc(b, 'list_channels', {}),
      (x) => x.channels[0]?.pending_tlcs[0]?.status?.Inbound === 'Committed',
    );
    expect(withTlc.channels[0].received_tlc_balance).toBe(hex(100n * CKB));
    expect(withTlc.channels[0].remote_balance).toBe(hex(338n * CKB));
    await rpc(b, 'remove_tlc', {
      channel_id: ca.channel_id,
      tlc_id: '0x0',
      reason: { payment_preimage: preimage },
    });
    const settled = await until(
      'TLC removed at A',
      () => rpc(a, 'list_channels', {}),
      (x) => x.channels[0]?.pending_tlcs.length === 0 && x.channels[0]?.remote_balance === hex(288n * CKB),
    );
    expect(settled.channels[0].local_balance).toBe(hex(338n * CKB));
    // A failed TLC returns to the offerer. While A's side of the last round is still running,
    // add_tlc answers with the reference's text; a client retries.
    await until(
      'second add_tlc accepted',
      () =>
        a.call('add_tlc', [
          { channel_id: ca.channel_id, amount: hex(10n * CKB), payment_hash: paymentHash, expiry },
        ]),
      (r) => {
        if (r.error) expect(r.error.message).toBe('Unable to handle TLC command in waiting TLC ACK state');
        return r.result?.tlc_id === '0x1';
      },
    );
    await until(
      'second TLC at B',
      () => rpc(b, 'list_channels', {}),
      (x) => x.channels[0]?.pending_tlcs[0]?.status?.Inbound === 'Committed',
    );
    const bad = await b.call('remove_tlc', [
      { channel_id: ca.channel_id, tlc_id: '0x1', reason: { error_code: 'NoSuchCode' } },
    ]);
    expect(bad.error?.message).toBe('invalid error code: NoSuchCode');
    await rpc(b, 'remove_tlc', {
      channel_id: ca.channel_id,
      tlc_id: '0x1',
      reason: { error_code: 'IncorrectOrUnknownPaymentDetails' },
    });
    const back = await until(
      'failed TLC back at A',
      () => rpc(a, 'list_channels', {}),
      (x) => x.channels[0]?.pending_tlcs.length === 0 && x.channels[0]?.local_balance === hex(338n * CKB),
    );
    expect(back.channels[0].remote_balance).toBe(hex(288n * CKB));
    const bList = await until(
      'B settled',
      () => rpc(b, 'list_channels', {}),
      (x) => x.channels[0]?.pending_tlcs.length === 0,
    );
    // Let both sides finish the last round before anything else is asked of the channel.
    await new Promise((r) => setTimeout(r, 500));
    expect([bList.channels[0].local_balance, bList.channels[0].remote_balance]).toEqual([
      hex(288n * CKB),
      hex(338n * CKB),
    ]);
    const unknown = await a.call('add_tlc', [
      { channel_id: `0x${'cd'.repeat(32)}`, amount: '0x1', payment_hash: paymentHash, expiry },
    ]);
    expect(unknown.error?.message).toBe(`Channel not found: Hash256(0x${'cd'.repeat(32)})`);
  }, 60_000);
});

describe('TLCs both ways at once', () => {
  it('colliding rounds resolve: both TLCs commit, both fulfil, net balances unchanged', async () => {
    const ca = (await rpc(a, 'list_channels', {})).channels[0];
    const pa = `0x${'a1'.repeat(32)}`;
    const pb = `0x${'b1'.repeat(32)}`;
    const hashOf = (p: string) => ccc.hexFrom(ckbHash(ccc.bytesFrom(p)));
    const expiry = hex(BigInt(Date.now() + 3_600_000));
    const add = (n: NodeProcess, p: string) =>
      until(
        'add accepted',
        () =>
          n.call('add_tlc', [
            { channel_id: ca.channel_id, amount: hex(5n * CKB), payment_hash: hashOf(p), expiry },
          ]),
        (r) => !r.error,
      );
    const [ra, rb] = await Promise.all([add(a, pa), add(b, pb)]);
    const both = (x: any) =>
      x.channels[0]?.pending_tlcs.length === 2 &&
      x.channels[0].pending_tlcs.every((t: any) => Object.values(t.status)[0] === 'Committed');
    await until('both committed at A', () => rpc(a, 'list_channels', {}), both);
    await until('both committed at B', () => rpc(b, 'list_channels', {}), both);
    const fulfil = (n: NodeProcess, id: string, p: string) =>
      until(
        'remove accepted',
        () =>
          n.call('remove_tlc', [{ channel_id: ca.channel_id, tlc_id: id, reason: { payment_preimage: p } }]),
        (r) => !r.error,
      );
    await Promise.all([fulfil(b, ra.result.tlc_id, pa), fulfil(a, rb.result.tlc_id, pb)]);
    const done = (x: any) => x.channels[0]?.pending_tlcs.length === 0;
    const fa = (await until('A clear', () => rpc(a, 'list_channels', {}), done)).channels[0];
    const fb = (await until('B clear', () => rpc(b, 'list_channels', {}), done)).channels[0];
    expect([fa.local_balance, fa.remote_balance]).toEqual([hex(338n * CKB), hex(288n * CKB)]);
    expect([fb.local_balance, fb.remote_balance]).toEqual([hex(288n * CKB), hex(338n * CKB)]);
    await new Promise((r) => setTimeout(r, 500));
  }, 60_000);
});

describe('closing', () => {
  it('cooperative close pays each side balance + reserve (minus the initiator fee) at its close_script', async () => {
    const client = createChainClient({ rpcUrl: chain.url });
    const ca = (await rpc(a, 'list_channels', {})).channels[0];
    // A closes to another lock of its choosing; B's share goes to B's default lock.
    const aLock = { ...aInfo.default_funding_lock_script, args: `0x${'aa'.repeat(20)}` };
    await rpc(a, 'shutdown_channel', { channel_id: ca.channel_id, close_script: aLock, fee_rate: '0x3e8' });
    const closedA = await until(
      'A closed',
      () => rpc(a, 'list_channels', { include_closed: true }),
      (x) => x.channels[0]?.state.state_name === 'CLOSED',
    );
    const closedB = await until(
      'B closed',
      () => rpc(b, 'list_channels', { include_closed: true }),
      (x) => x.channels[0]?.state.state_name === 'CLOSED',
    );
    expect(closedA.channels[0].state.state_flags).toEqual(['COOPERATIVE']);
    expect(closedB.channels[0].state.state_flags).toEqual(['COOPERATIVE']);
    const hash = closedA.channels[0].shutdown_transaction_hash;
    expect(closedB.channels[0].shutdown_transaction_hash).toBe(hash);
    const tx = (await client.getTransaction(hash)) as any;
    const outputs = tx.transaction.outputs as { capacity: string; lock: { args: string } }[];
    const toA = outputs.find((o) => o.lock.args === aLock.args)!;
    const toB = outputs.find((o) => o.lock.args === bInfo.default_funding_lock_script.args)!;
    // The initiator pays the fee (528 bytes → 528 shannons at 1000/KB with 2 deps; 1 dep here).
    expect(BigInt(toB.capacity)).toBe(350n * CKB);
    expect(400n * CKB - BigInt(toA.capacity)).toBe(
      BigInt(shutdownTxSize(1, [toCcc(aLock), toCcc(bInfo.default_funding_lock_script)])),
    );
    // Closed channels are hidden unless asked for; closing twice is an error.
    expect((await rpc(a, 'list_channels', {})).channels).toHaveLength(0);
    const again = await a.call('shutdown_channel', [{ channel_id: ca.channel_id }]);
    expect(again.error?.message).toBe('Messaging failed because channel is closed');
    const info = await rpc(a, 'node_info', undefined);
    expect(info.channel_count).toBe('0x0');
  }, 60_000);
});
