/**
 * The hub as a separate `strand cch` process following the hub's node over JSON-RPC and
 * `subscribe_store_changes` (fnn v0.8's standalone mode), and its orders surviving a kill:
 * - Fiber → Lightning, killed (SIGKILL) while LND's payment is in flight; the payment succeeds
 *   while the hub is down; restarted, the hub tracks it, settles the Fiber side, and the order
 *   ends Success.
 * - Lightning → Fiber, killed while Pending; the outside payer pays while the hub is down;
 *   restarted, the hub sees the held HTLC, pays the user on Fiber, settles LND.
 * - Started without `cch.fiber_rpc_url`: refuses to start, naming the field.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rpc, until } from '../channel/process-helpers.ts';
import { runStrand, tempDir } from '../helpers/node-process.ts';
import {
  type HubProcess,
  hex,
  newPreimage,
  orderStatus,
  type SwapNetwork,
  startStandaloneHub,
  startSwapNetwork,
  tokenBalance,
} from './helpers.ts';

let net: SwapNetwork;
let hub: HubProcess;

beforeAll(async () => {
  net = await startSwapNetwork({ inProcessHub: false });
  hub = await startStandaloneHub(net);
}, 240_000);

afterAll(async () => {
  if (process.env.DEBUG_CCH) console.log(hub?.output().slice(-8000));
  await hub?.stop();
  await net?.stop();
});

async function restartHub(): Promise<void> {
  hub = await startStandaloneHub(net, hub.dir);
}

describe('a separate hub, restarted mid-swap', () => {
  it('Fiber → Lightning: resumes an in-flight Lightning payment after SIGKILL and settles the Fiber side', async () => {
    net.double.payeeBehaviour = 'hold';
    const out = net.double.outsideInvoice({ amountSat: 3_000 });
    const order = await rpc(hub, 'send_btc', { btc_pay_req: out.request, currency: 'Fibd' });
    const userBefore = await tokenBalance(net.user);
    await until(
      'a route to the hub',
      () => net.user.call('send_payment', [{ invoice: order.incoming_invoice.Fiber }]),
      (r) => !r.error,
    );
    await orderStatus(hub, out.paymentHash, 'OutgoingInFlight');
    await hub.stop('SIGKILL');
    net.double.payeeBehaviour = 'succeed';
    net.double.releasePayment(out.paymentHash, 'succeed');
    // While the hub is down the user's TLC stays held at the hub's node.
    expect((await rpc(net.hub, 'get_invoice', { payment_hash: out.paymentHash })).status).toBe('Received');

    await restartHub();
    expect((await orderStatus(hub, out.paymentHash, ['Success', 'Failed'])).status).toBe('Success');
    const paid = await until(
      'the user’s payment to end',
      () => rpc(net.user, 'get_payment', { payment_hash: out.paymentHash }),
      (p) => p.status === 'Success' || p.status === 'Failed',
    );
    expect(paid.status).toBe('Success');
    // fnn's default fee: 1 per million sats, rounded down (0 here), no base fee.
    expect(order.fee_sats).toBe('0x0');
    expect(await tokenBalance(net.user)).toBe(userBefore - 3_000n);
  }, 180_000);

  it('Lightning → Fiber: an HTLC held while the hub was down is seen on restart and the swap completes', async () => {
    const { preimage, paymentHash } = newPreimage();
    const inv = await rpc(net.user, 'new_invoice', {
      amount: hex(4_000n),
      currency: 'Fibd',
      payment_preimage: preimage,
      hash_algorithm: 'sha256',
      udt_type_script: net.udt,
      final_expiry_delta: hex(3 * 3600 * 1000),
    });
    const order = await rpc(hub, 'receive_btc', { fiber_pay_req: inv.invoice_address });
    await hub.stop('SIGKILL');
    const settled = net.double.payHoldInvoice(order.incoming_invoice.Lightning);
    await restartHub();
    expect(await settled).toBe(preimage);
    expect((await orderStatus(hub, paymentHash, ['Success', 'Failed'])).status).toBe('Success');
    expect((await rpc(net.user, 'get_invoice', { payment_hash: paymentHash })).status).toBe('Paid');
  }, 180_000);

  it('refuses to start without cch.fiber_rpc_url, naming the field', async () => {
    const r = await runStrand(['cch', '-d', tempDir('strand-cch-bad-')]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/cch\.fiber_rpc_url is required/);
  });
});
