/**
 * Swaps end to end through a hub running inside its node (`services: [fiber, rpc, ckb, cch]`):
 * real node processes on the dev chain with token channels in the wrapped BTC (the test UDT),
 * and the LND double as the hub's Lightning node, playing the outside payer and payee.
 *
 * - Lightning → Fiber (`receive_btc`): the user's Fiber invoice is paid by the hub once the
 *   outside payer's HTLC is held by LND; the hub then settles LND with the preimage it learned.
 * - Fiber → Lightning (`send_btc`): the user pays the hub's Fiber hold invoice; the hub pays the
 *   outside BOLT 11 invoice through LND, then settles the Fiber side.
 * - Failures: the outgoing side fails → the incoming side is cancelled and its payer refunded.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodePayReq } from '../../src/cch/bolt11.ts';
import { rpc, until } from '../channel/process-helpers.ts';
import {
  hex,
  newPreimage,
  orderStatus,
  type SwapNetwork,
  startSwapNetwork,
  tokenBalance,
} from './helpers.ts';

let net: SwapNetwork;

beforeAll(async () => {
  net = await startSwapNetwork({
    inProcessHub: true,
    cch: { base_fee_sats: 3, fee_rate_per_million_sats: 1000 },
  });
}, 240_000);

afterAll(async () => {
  if (process.env.DEBUG_CCH) console.log(net?.hub.output().slice(-8000));
  await net?.stop();
});

/** The user's Fiber invoice in the wrapped BTC, paid with SHA-256 as LND needs. */
async function userInvoice(amount: bigint, preimage: string, extra: Record<string, unknown> = {}) {
  const inv = await rpc(net.user, 'new_invoice', {
    amount: hex(amount),
    currency: 'Fibd',
    payment_preimage: preimage,
    hash_algorithm: 'sha256',
    udt_type_script: net.udt,
    final_expiry_delta: hex(3 * 3600 * 1000),
    expiry: hex(24 * 3600),
    ...extra,
  });
  return inv.invoice_address as string;
}

describe('Lightning → Fiber (receive_btc)', () => {
  it('pays the user in wrapped BTC once the Lightning payment is held, then settles it with the preimage', async () => {
    const { preimage, paymentHash } = newPreimage();
    const invoice = await userInvoice(10_000n, preimage);
    const [hubBefore, userBefore] = [await tokenBalance(net.hub), await tokenBalance(net.user)];

    const order = await rpc(net.hub, 'receive_btc', { fiber_pay_req: invoice });
    // fee: 10 000 × 1000 / 1 000 000 + 3 = 13 sats, charged on the Lightning side.
    expect(order).toMatchObject({
      payment_hash: paymentHash,
      status: 'Pending',
      amount_sats: hex(10_000),
      fee_sats: hex(13),
      outgoing_pay_req: invoice,
      wrapped_btc_type_script: net.udt,
      expiry_delta_seconds: hex(36 * 3600),
    });
    const bolt11 = order.incoming_invoice.Lightning as string;
    const ln = decodePayReq(bolt11);
    expect(ln).toMatchObject({
      network: 'Regtest',
      paymentHash,
      amountMsat: 10_013_000n,
      minFinalCltvExpiryDelta: 180,
    });

    // The outside payer pays the hub's hold invoice; LND holds it until the hub settles.
    const settled = net.double.payHoldInvoice(bolt11);
    expect(await settled).toBe(preimage);
    const done = await orderStatus(net.hub, paymentHash, ['Success', 'Failed']);
    expect(done.status).toBe('Success');
    expect(net.double.invoices.get(paymentHash.slice(2))?.state).toBe('SETTLED');
    expect((await rpc(net.user, 'get_invoice', { payment_hash: paymentHash })).status).toBe('Paid');
    expect(await tokenBalance(net.user)).toBe(userBefore + 10_000n);
    expect(await tokenBalance(net.hub)).toBe(hubBefore - 10_000n);
  }, 120_000);

  it('fails the order and cancels the Lightning hold invoice when the Fiber payment fails', async () => {
    const { preimage, paymentHash } = newPreimage();
    const invoice = await userInvoice(5_000n, preimage);
    const order = await rpc(net.hub, 'receive_btc', { fiber_pay_req: invoice });
    // The user withdraws the invoice: the hub's payment to it is failed back by the user's node.
    await rpc(net.user, 'cancel_invoice', { payment_hash: paymentHash });
    const hubBefore = await tokenBalance(net.hub);
    const refunded = net.double.payHoldInvoice(order.incoming_invoice.Lightning);
    await expect(refunded).rejects.toThrow(/canceled/);
    const failed = await orderStatus(net.hub, paymentHash, 'Failed');
    expect(failed.failure_reason).toMatch(/outgoing payment failed/);
    expect(net.double.invoices.get(paymentHash.slice(2))?.state).toBe('CANCELED');
    expect(await tokenBalance(net.hub)).toBe(hubBefore);
  }, 120_000);
});

describe('Fiber → Lightning (send_btc)', () => {
  it('pays the outside BOLT 11 invoice once the user’s Fiber payment is held, then settles it', async () => {
    const out = net.double.outsideInvoice({ amountSat: 20_000 });
    const order = await rpc(net.hub, 'send_btc', { btc_pay_req: out.request, currency: 'Fibd' });
    // fee: 20 000 000 msat × 1000 / 10⁹ + 3 = 23 sats, added to the Fiber invoice.
    expect(order).toMatchObject({
      payment_hash: out.paymentHash,
      status: 'Pending',
      amount_sats: hex(20_023),
      fee_sats: hex(23),
      outgoing_pay_req: out.request,
    });
    const fiberInvoice = order.incoming_invoice.Fiber as string;
    const parsed = await rpc(net.user, 'parse_invoice', { invoice: fiberInvoice });
    expect(BigInt(parsed.invoice.amount)).toBe(20_023n);
    const [hubBefore, userBefore] = [await tokenBalance(net.hub), await tokenBalance(net.user)];

    await until(
      'a route to the hub',
      () => net.user.call('send_payment', [{ invoice: fiberInvoice }]),
      (r) => !r.error,
    );
    const done = await orderStatus(net.hub, out.paymentHash, ['Success', 'Failed']);
    expect(done.status).toBe('Success');
    const paid = await until(
      'the user’s payment to end',
      () => rpc(net.user, 'get_payment', { payment_hash: out.paymentHash }),
      (p) => p.status === 'Success' || p.status === 'Failed',
    );
    expect(paid.status).toBe('Success');
    // fnn's route cap: half the incoming final expiry (30 h) in blocks of 10 min, at most.
    const sent = net.double.payments.get(out.paymentHash.slice(2))!;
    expect(sent).toMatchObject({ state: 'SUCCEEDED', timeoutSeconds: 60 });
    expect(sent.cltvLimit).toBeGreaterThan(85);
    expect(sent.cltvLimit).toBeLessThanOrEqual(90);
    expect(await tokenBalance(net.hub)).toBe(hubBefore + 20_023n);
    expect(await tokenBalance(net.user)).toBe(userBefore - 20_023n);
  }, 120_000);

  it('refunds the user (the Fiber hold invoice is cancelled) when the Lightning payment fails', async () => {
    net.double.payeeBehaviour = 'fail';
    try {
      const out = net.double.outsideInvoice({ amountSat: 7_000 });
      const order = await rpc(net.hub, 'send_btc', { btc_pay_req: out.request, currency: 'Fibd' });
      const userBefore = await tokenBalance(net.user);
      await until(
        'a route to the hub',
        () => net.user.call('send_payment', [{ invoice: order.incoming_invoice.Fiber }]),
        (r) => !r.error,
      );
      const failed = await orderStatus(net.hub, out.paymentHash, 'Failed');
      expect(failed.failure_reason).toMatch(/FAILURE_REASON_NO_ROUTE/);
      const paid = await until(
        'the user’s payment to end',
        () => rpc(net.user, 'get_payment', { payment_hash: out.paymentHash }),
        (p) => p.status === 'Success' || p.status === 'Failed',
      );
      expect(paid.status).toBe('Failed');
      expect((await rpc(net.hub, 'get_invoice', { payment_hash: out.paymentHash })).status).toBe('Cancelled');
      expect(await tokenBalance(net.user)).toBe(userBefore);
    } finally {
      net.double.payeeBehaviour = 'succeed';
    }
  }, 120_000);
});
