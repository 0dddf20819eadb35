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
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodePayReq } from '../../src/cch/bolt11.ts';
import { rpc, until } from '../channel/process-helpers.ts';
import {
  cchSection,
  hex,
  newPreimage,
  orderStatus,
  type SwapNetwork,
  startFiberNode,
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

describe('bad orders are refused with -32602 naming the field, and change nothing', () => {
  const refused = async (method: string, params: Record<string, unknown>, message: RegExp) => {
    const r = await net.hub.call(method, [params]);
    expect(r.error?.code, JSON.stringify(r)).toBe(-32602);
    expect(r.error?.message).toMatch(message);
  };
  const noOrder = async (paymentHash: string) => {
    const r = await net.hub.call('get_cch_order', [{ payment_hash: paymentHash }]);
    expect(r.error).toMatchObject({ code: -32000, message: `Store error: Key not found: ${paymentHash}` });
    expect((await net.hub.call('get_invoice', [{ payment_hash: paymentHash }])).error).toBeDefined();
  };
  const now = () => Math.floor(Date.now() / 1000);

  it('send_btc: malformed, wrong network, expired, too short, no amount, unsafe final CLTV, wrong currency', async () => {
    await refused(
      'send_btc',
      { btc_pay_req: 'lnbcrt1garbage', currency: 'Fibd' },
      /^btc_pay_req: BTC invoice parse error/,
    );
    await refused('send_btc', { currency: 'Fibd' }, /btc_pay_req/);
    const cases: [Parameters<typeof net.double.outsideInvoice>[0], RegExp][] = [
      [
        { amountSat: 1000, network: 'bc' },
        /^btc_pay_req: BTC invoice network mismatch: expected Regtest, got Bitcoin$/,
      ],
      [{ amountSat: 1000, network: 'tb' }, /expected Regtest, got BitcoinTestnet$/],
      [
        { amountSat: 1000, timestamp: now() - 7200, expirySeconds: 3600 },
        /^btc_pay_req: BTC invoice expired$/,
      ],
      [{ amountSat: 1000, expirySeconds: 3600 }, /^btc_pay_req: Outgoing invoice expiry time is too short$/],
      [{}, /^btc_pay_req: BTC invoice missing amount$/],
      [
        { amountSat: 1000, minFinalCltv: 90 },
        /^btc_pay_req: BTC invoice final TLC expiry delta exceeds safe limit/,
      ],
    ];
    for (const [o, message] of cases) {
      const out = net.double.outsideInvoice(o);
      await refused('send_btc', { btc_pay_req: out.request, currency: 'Fibd' }, message);
      await noOrder(out.paymentHash);
    }
    const out = net.double.outsideInvoice({ amountSat: 1000 });
    await refused(
      'send_btc',
      { btc_pay_req: out.request, currency: 'Fibb' },
      /^currency: CKB invoice network mismatch: expected Fibd, got Fibb$/,
    );
    await refused(
      'send_btc',
      { btc_pay_req: out.request, currency: 'BTC' },
      /currency.*expected one of Fibb, Fibt, Fibd/,
    );
    await noOrder(out.paymentHash);
  }, 60_000);

  it('receive_btc: malformed, not the wrapped BTC, not SHA-256, over the amount limit, unsafe final expiry, too short', async () => {
    const lndInvoices = net.double.invoices.size;
    await refused('receive_btc', { fiber_pay_req: 'fibd1nonsense' }, /^fiber_pay_req: CKB invoice error/);
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ udt_type_script: null }, /^fiber_pay_req: Wrapped BTC type script mismatch$/],
      [{ hash_algorithm: 'ckb_hash' }, /^fiber_pay_req: CKB invoice hash algorithm is not SHA256/],
      [{ amount: hex(1n << 63n) }, /^fiber_pay_req: ReceiveBTC order payment amount is too large$/],
      [
        { final_expiry_delta: hex(16 * 3600 * 1000) },
        /^fiber_pay_req: CKB invoice final TLC expiry delta exceeds safe limit/,
      ],
      [{ expiry: hex(3600) }, /^fiber_pay_req: Outgoing invoice expiry time is too short$/],
    ];
    for (const [extra, message] of cases) {
      const { preimage, paymentHash } = newPreimage();
      const invoice = await userInvoice(1000n, preimage, extra);
      await refused('receive_btc', { fiber_pay_req: invoice }, message);
      await noOrder(paymentHash);
    }
    // No hold invoice was made at LND for any of them.
    expect(net.double.invoices.size).toBe(lndInvoices);
  }, 60_000);

  it('random strings and mutated or cut invoices: always -32602, never an internal error', async () => {
    const valid = net.double.outsideInvoice({ amountSat: 1000 }).request;
    const mutate = (text: string, at: number, c: string) => text.slice(0, at) + c + text.slice(at + 1);
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.string({ maxLength: 300 }),
          fc
            .tuple(fc.nat(valid.length - 1), fc.constantFrom(...'qpzry9x8gf2tvdw0s3jn54khce6mua7l'))
            .map(([at, c]) => mutate(valid, at, c)),
          fc.nat(valid.length).map((n) => valid.slice(0, n)),
        ),
        fc.constantFrom('send_btc', 'receive_btc'),
        async (text, method) => {
          const params =
            method === 'send_btc' ? { btc_pay_req: text, currency: 'Fibd' } : { fiber_pay_req: text };
          const r = await net.hub.call(method, [params]);
          // A one-character change may still be a valid invoice (the bech32 checksum catches most).
          if (text === valid || !r.error) return;
          expect(r.error.code, JSON.stringify(r.error)).toBe(-32602);
        },
      ),
      { numRuns: 200 },
    );
  }, 120_000);

  it('get_cch_order: a malformed hash is -32602; one order per payment hash', async () => {
    await refused('get_cch_order', { payment_hash: '0x12' }, /payment_hash/);
    const { preimage } = newPreimage();
    const invoice = await userInvoice(1000n, preimage);
    await rpc(net.hub, 'receive_btc', { fiber_pay_req: invoice });
    const again = await net.hub.call('receive_btc', [{ fiber_pay_req: invoice }]);
    expect(again.error?.message).toMatch(/^Store error: Inserting duplicated key: 0x/);
  });
});

describe('a hub inside its node, the node killed mid-swap', () => {
  it('resumes an in-flight Lightning payment after the node restarts, and settles the held Fiber TLC', async () => {
    net.double.payeeBehaviour = 'hold';
    const out = net.double.outsideInvoice({ amountSat: 6_000 });
    const order = await rpc(net.hub, 'send_btc', { btc_pay_req: out.request, currency: 'Fibd' });
    const userBefore = await tokenBalance(net.user);
    await until(
      'a route to the hub',
      () => net.user.call('send_payment', [{ invoice: order.incoming_invoice.Fiber }]),
      (r) => !r.error,
    );
    await orderStatus(net.hub, out.paymentHash, 'OutgoingInFlight');
    net.hub.proc.kill('SIGKILL');
    await new Promise((r) => net.hub.proc.once('exit', r));
    net.double.payeeBehaviour = 'succeed';
    net.double.releasePayment(out.paymentHash, 'succeed');

    net.hub = await startFiberNode(1, net.chain.url, net.whitelist, {
      dir: net.hub.dir,
      services: ['fiber', 'rpc', 'ckb', 'cch'],
      cch: cchSection(net.double, net.udt, { base_fee_sats: 3, fee_rate_per_million_sats: 1000 }),
    });
    const userInfo = await rpc(net.user, 'node_info', undefined);
    await net.hub.call('connect_peer', [{ address: userInfo.addresses[0] }]);
    expect((await orderStatus(net.hub, out.paymentHash, ['Success', 'Failed'])).status).toBe('Success');
    const paid = await until(
      'the user’s payment to end',
      () => rpc(net.user, 'get_payment', { payment_hash: out.paymentHash }),
      (p) => p.status === 'Success' || p.status === 'Failed',
    );
    expect(paid.status).toBe('Success');
    expect(await tokenBalance(net.user)).toBe(userBefore - BigInt(order.amount_sats));
  }, 180_000);
});
