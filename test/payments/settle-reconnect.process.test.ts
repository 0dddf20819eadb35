/**
 * A paid invoice is always marked Paid, and a fulfil held up by a reconnecting peer goes out as
 * soon as the channel is reestablished (real processes, real dev chain). The receiver checks its
 * channels' TLCs only once an hour here, so only the prompt paths can settle anything:
 * - a received TLC fulfilled by a path other than the relay's (here dev `remove_tlc`) still moves
 *   its invoice to Paid, with the channel state that removed it;
 * - a hold invoice settled while the channel's round waits for a peer that is gone (stopped and
 *   disconnected for longer than a TLC command waits for a round): once the peer is back and the
 *   channel reestablished, the TLC is fulfilled, the invoice Paid and the payment a Success.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hexToBytes } from '../../src/codec/hex.ts';
import {
  CKB,
  connect,
  type DevchainProcess,
  payHoldInvoice,
  rpc,
  startChannelNode,
  startDevchain,
  until,
} from '../channel/process-helpers.ts';
import type { NodeProcess } from '../helpers/node-process.ts';

const hex = (v: bigint) => `0x${v.toString(16)}`;
const MODULES = ['info', 'peer', 'channel', 'dev', 'graph', 'payment', 'invoice'];
/** Longer than a TLC command waits for a busy channel's round (10 s). */
const GONE_MS = 12_000;

let chain: DevchainProcess;
let a: NodeProcess;
let b: NodeProcess;
let aInfo: any;
let channelId: string;

async function channelOf(node: NodeProcess) {
  return (await rpc(node, 'list_channels', {})).channels[0];
}

/** A hold invoice of B's (B knows only the hash) paid by A, its TLC held by B. */
async function heldPayment(seed: string, amount: bigint) {
  const { preimage, paymentHash } = await payHoldInvoice(a, b, amount, hexToBytes(`0x${seed.repeat(32)}`));
  const tlc = (await channelOf(b)).pending_tlcs.find((t: any) => t.payment_hash === paymentHash);
  return { preimage, paymentHash, tlcId: tlc.id as string };
}

beforeAll(async () => {
  chain = await startDevchain([1, 2]);
  a = await startChannelNode(1, chain.url, {}, undefined, {}, MODULES);
  b = await startChannelNode(
    2,
    chain.url,
    { check_channels_interval_ms: 3_600_000, auto_accept_channel_ckb_funding_amount: Number(250n * CKB) },
    undefined,
    {},
    MODULES,
  );
  const c = await connect(a, b);
  aInfo = c.aInfo;
  await rpc(a, 'open_channel', { pubkey: c.bInfo.pubkey, funding_amount: hex(500n * CKB), public: false });
  for (const n of [a, b])
    await until(
      'channel ready',
      () => channelOf(n),
      (ch) => ch?.state.state_name === 'CHANNEL_READY',
    );
  channelId = (await channelOf(b)).channel_id;
}, 180_000);

afterAll(async () => {
  if (process.env.DEBUG_CH) console.log(a?.output().slice(-6000), '\n-----\n', b?.output().slice(-6000));
  a?.proc.kill('SIGCONT');
  await a?.stop();
  await b?.stop();
  await chain?.stop();
});

describe('the invoice follows its TLC', () => {
  it('marks the invoice Paid when its TLC is fulfilled by any path (here dev remove_tlc)', async () => {
    const p = await heldPayment('31', 3n * CKB);
    await rpc(b, 'remove_tlc', {
      channel_id: channelId,
      tlc_id: p.tlcId,
      reason: { payment_preimage: p.preimage },
    });
    await until(
      'the payment to succeed',
      () => rpc(a, 'get_payment', { payment_hash: p.paymentHash }),
      (s) => s.status === 'Success',
    );
    expect((await rpc(b, 'get_invoice', { payment_hash: p.paymentHash })).status).toBe('Paid');
  }, 90_000);

  it('fulfils a settled hold invoice as soon as the channel is reestablished with a peer that was gone', async () => {
    const p = await heldPayment('32', 4n * CKB);
    a.proc.kill('SIGSTOP');
    try {
      await rpc(b, 'disconnect_peer', { pubkey: aInfo.pubkey });
      // B starts a round the gone peer cannot answer; the fulfil of settle_invoice waits behind it.
      await rpc(b, 'commitment_signed', { channel_id: channelId });
      await rpc(b, 'settle_invoice', { payment_hash: p.paymentHash, payment_preimage: p.preimage });
      await new Promise((r) => setTimeout(r, GONE_MS));
      expect((await rpc(b, 'get_invoice', { payment_hash: p.paymentHash })).status).toBe('Received');
    } finally {
      a.proc.kill('SIGCONT');
    }
    // A redials B; the reestablish replays B's round, and the fulfil follows it.
    await until(
      'the payment to succeed',
      () => rpc(a, 'get_payment', { payment_hash: p.paymentHash }),
      (s) => s.status === 'Success',
      45_000,
    );
    expect((await rpc(b, 'get_invoice', { payment_hash: p.paymentHash })).status).toBe('Paid');
    const [ca, cb] = [await channelOf(a), await channelOf(b)];
    expect(cb.pending_tlcs).toEqual([]);
    expect(ca.remote_balance).toBe(cb.local_balance);
  }, 120_000);
});
