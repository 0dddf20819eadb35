/**
 * Restarts with real processes: a ready channel survives a restart of the acceptor; a TLC round
 * interrupted by a restart resumes through ReestablishChannel; an opening interrupted by a
 * restart either completes or fails cleanly on both sides. Balances always sum to the capacity.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
const B_CFG = { auto_accept_channel_ckb_funding_amount: Number(250n * CKB) };
let chain: DevchainProcess;
let a: NodeProcess;
let b: NodeProcess;
let bInfo: any;

beforeAll(async () => {
  chain = await startDevchain([1, 2]);
  a = await startChannelNode(1, chain.url);
  b = await startChannelNode(2, chain.url, B_CFG);
  ({ bInfo } = await connect(a, b));
}, 120_000);

afterAll(async () => {
  if (process.env.DEBUG_CH) console.log(a?.output().slice(-4000), '\n-----\n', b?.output().slice(-4000));
  await a?.stop();
  await b?.stop();
  await chain?.stop();
});

async function restartB(): Promise<void> {
  const dir = b.dir;
  await b.stop();
  b = await startChannelNode(2, chain.url, B_CFG, dir);
  ({ bInfo } = await connect(a, b));
}

const sumsToCapacity = (c: any) =>
  BigInt(c.local_balance) +
  BigInt(c.remote_balance) +
  BigInt(c.offered_tlc_balance) +
  BigInt(c.received_tlc_balance);

describe('restarts', () => {
  let id = '';

  it('a ready channel survives a restart of the peer and still carries TLCs', async () => {
    await rpc(a, 'open_channel', { pubkey: bInfo.pubkey, funding_amount: hex(500n * CKB), public: false });
    const r = await until(
      'ready',
      () => rpc(a, 'list_channels', {}),
      (x) => x.channels[0]?.state.state_name === 'CHANNEL_READY',
    );
    await until(
      'B ready',
      () => rpc(b, 'list_channels', {}),
      (x) => x.channels[0]?.state.state_name === 'CHANNEL_READY',
    );
    id = r.channels[0].channel_id;
    await restartB();
    const afterB = (await rpc(b, 'list_channels', {})).channels[0];
    expect(afterB.state.state_name).toBe('CHANNEL_READY');
    expect([afterB.local_balance, afterB.remote_balance]).toEqual([hex(188n * CKB), hex(438n * CKB)]);
    const hash = `0x${'11'.repeat(32)}`;
    await rpc(a, 'add_tlc', {
      channel_id: id,
      amount: hex(5n * CKB),
      payment_hash: hash,
      expiry: hex(BigInt(Date.now() + 3_600_000)),
    });
    await until(
      'TLC at B',
      () => rpc(b, 'list_channels', {}),
      (x) => x.channels[0]?.pending_tlcs[0]?.status?.Inbound === 'Committed',
    );
  }, 120_000);

  it('a TLC round cut by a restart resumes after the reconnect', async () => {
    await until(
      'A idle',
      () =>
        a.call('add_tlc', [
          {
            channel_id: id,
            amount: hex(3n * CKB),
            payment_hash: `0x${'22'.repeat(32)}`,
            expiry: hex(BigInt(Date.now() + 3_600_000)),
          },
        ]),
      (x) => !x.error,
    );
    // Cut at once: B may have seen nothing, some or all of the round.
    await restartB();
    const bList = await until(
      'both TLCs committed at B',
      () => rpc(b, 'list_channels', {}),
      (x) => x.channels[0]?.pending_tlcs.filter((t: any) => t.status.Inbound === 'Committed').length === 2,
      60_000,
    );
    const aList = await until(
      'A idle',
      () => rpc(a, 'list_channels', {}),
      (x) => x.channels[0]?.pending_tlcs.every((t: any) => t.status.Outbound === 'Committed'),
    );
    expect(aList.channels[0].local_balance).toBe(hex(430n * CKB));
    expect(sumsToCapacity(aList.channels[0])).toBe(626n * CKB);
    expect(sumsToCapacity(bList.channels[0])).toBe(626n * CKB);
  }, 120_000);

  it('an opening cut by a restart completes or fails cleanly on both sides', async () => {
    const r = await rpc(a, 'open_channel', {
      pubkey: bInfo.pubkey,
      funding_amount: hex(300n * CKB),
      public: false,
    });
    await restartB();
    const done = (c: any) =>
      c &&
      (c.state.state_name === 'CHANNEL_READY' ||
        (c.state.state_name === 'CLOSED' && c.state.state_flags.includes('FUNDING_ABORTED')));
    const find = (x: any) => x.channels.find((c: any) => c.channel_id !== id);
    const ca = find(
      await until(
        'A settled',
        () => rpc(a, 'list_channels', { include_closed: true }),
        (x) => done(find(x)),
        60_000,
      ),
    );
    if (ca.state.state_name === 'CHANNEL_READY') {
      const cb = find(
        await until(
          'B ready',
          () => rpc(b, 'list_channels', {}),
          (x) => done(find(x)),
        ),
      );
      expect([cb.local_balance, cb.remote_balance]).toEqual([hex(188n * CKB), hex(238n * CKB)]);
    } else {
      // Nothing of B's lingers as open; the temporary id is the one open_channel returned.
      const open = (await rpc(b, 'list_channels', {})).channels.filter((c: any) => c.channel_id !== id);
      expect(open.every((c: any) => c.state.state_name === 'CLOSED')).toBe(true);
      expect([ca.channel_id, r.temporary_channel_id]).toContain(ca.channel_id);
    }
  }, 120_000);
});
