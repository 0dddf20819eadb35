/**
 * Money follows the invoice, with real processes on the dev chain: A and B share a CKB channel
 * and a channel in the dev chain's test token. A token invoice is paid in the token (the CKB
 * channel does not move); an explicit udt_type_script naming another asset is refused; a payment
 * that names the invoice's hash but another asset (as any payer may send one) is failed back by
 * B with IncorrectOrUnknownPaymentDetails, and the invoice stays Open.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CKB,
  connect,
  type DevchainProcess,
  rpc,
  startChannelNode,
  startDevchain,
  testUdtWhitelist,
  until,
} from '../channel/process-helpers.ts';
import type { NodeProcess } from '../helpers/node-process.ts';

const hex = (v: bigint) => `0x${v.toString(16)}`;
const MODULES = ['info', 'peer', 'channel', 'graph', 'payment', 'invoice'];

let chain: DevchainProcess;
let a: NodeProcess;
let b: NodeProcess;
let bPubkey: string;
let udt: { code_hash: string; hash_type: string; args: string };

/** B's local balances once no TLC is pending: [CKB channel, token channel]. */
async function balancesOfB(): Promise<bigint[]> {
  const { channels } = await until(
    'no TLC pending at B',
    () => rpc(b, 'list_channels', {}),
    (x) => x.channels.every((c: any) => c.pending_tlcs.length === 0),
  );
  const of = (token: boolean) => channels.find((c: any) => !!c.funding_udt_type_script === token);
  return [BigInt(of(false).local_balance), BigInt(of(true).local_balance)];
}

/** A opens one more channel to B; both see `count` ready channels. */
async function openReady(params: Record<string, unknown>, count: number) {
  await rpc(a, 'open_channel', { pubkey: bPubkey, public: false, ...params });
  for (const n of [a, b])
    await until(
      'channels ready',
      () => rpc(n, 'list_channels', {}),
      (x) =>
        x.channels.length === count && x.channels.every((c: any) => c.state.state_name === 'CHANNEL_READY'),
    );
}

beforeAll(async () => {
  chain = await startDevchain([1, 2], 5000, 200, undefined, 1000);
  const t = await testUdtWhitelist(chain.url);
  udt = t.udt;
  a = await startChannelNode(1, chain.url, {}, undefined, { udt_whitelist: t.whitelist }, MODULES);
  b = await startChannelNode(2, chain.url, {}, undefined, { udt_whitelist: t.whitelist }, MODULES);
  bPubkey = (await connect(a, b)).bInfo.pubkey;
  await openReady({ funding_amount: hex(600n), funding_udt_type_script: udt }, 1);
  await openReady({ funding_amount: hex(500n * CKB) }, 2);
}, 180_000);

afterAll(async () => {
  if (process.env.DEBUG_CH) console.log(a?.output().slice(-6000), '\n-----\n', b?.output().slice(-6000));
  await a?.stop();
  await b?.stop();
  await chain?.stop();
});

const invoice = (amount: bigint, token: boolean) =>
  rpc(b, 'new_invoice', {
    amount: hex(amount),
    currency: 'Fibd',
    ...(token ? { udt_type_script: udt } : {}),
  });

async function ended(hash: string) {
  return until(
    'the payment to end',
    () => rpc(a, 'get_payment', { payment_hash: hash }),
    (p) => p.status === 'Success' || p.status === 'Failed',
  );
}

describe('the asset of an invoice is the asset that moves', () => {
  it('pays a token invoice in the token; the CKB channel does not move', async () => {
    const before = await balancesOfB();
    const inv = await invoice(100n, true);
    const hash = inv.invoice.data.payment_hash;
    await until(
      'a route in the token',
      () => a.call('send_payment', [{ invoice: inv.invoice_address }]),
      (r) => !r.error,
    );
    expect((await ended(hash)).status).toBe('Success');
    expect((await rpc(b, 'get_invoice', { payment_hash: hash })).status).toBe('Paid');
    expect(await balancesOfB()).toEqual([before[0], before[1]! + 100n]);
  }, 90_000);

  it('refuses an explicit udt_type_script naming another asset than the invoice', async () => {
    const inv = await invoice(CKB, false);
    const r = await a.call('send_payment', [{ invoice: inv.invoice_address, udt_type_script: udt }]);
    expect(r.error?.message).toMatch(
      /^InvalidParameter: Failed to validate payment request: "udt_type_script does not match the invoice: the invoice is paid in CKB, udt_type_script names UDT \{code_hash: 0x/,
    );
    expect((await rpc(b, 'get_invoice', { payment_hash: inv.invoice.data.payment_hash })).status).toBe(
      'Open',
    );
  });

  for (const c of [
    { name: 'a CKB invoice paid in tokens', token: false, inToken: true },
    { name: 'a token invoice paid in CKB', token: true, inToken: false },
  ]) {
    it(`fails back ${c.name}: the invoice stays Open, nothing moves`, async () => {
      const before = await balancesOfB();
      const inv = await invoice(100n, c.token);
      const hash = inv.invoice.data.payment_hash;
      // Named by hash, target and amount, without the invoice: nothing on the payer checks the asset.
      const sent = await a.call('send_payment', [
        {
          target_pubkey: bPubkey,
          amount: hex(100n),
          payment_hash: hash,
          ...(c.inToken ? { udt_type_script: udt } : {}),
        },
      ]);
      expect(sent.error).toBeUndefined();
      const end = await ended(hash);
      expect(end.status).toBe('Failed');
      expect(end.failed_error).toBe('IncorrectOrUnknownPaymentDetails');
      expect((await rpc(b, 'get_invoice', { payment_hash: hash })).status).toBe('Open');
      expect(await balancesOfB()).toEqual(before);
    }, 90_000);
  }
});
