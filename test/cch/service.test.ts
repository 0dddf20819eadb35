/**
 * The hub's time rules, with the clock in the test's hands: `CchService` on a real SQLite store
 * and the LND double over gRPC, its Fiber node played by a recording agent (a process test
 * cannot move a node's clock 17 hours on). fnn's route expiry check (docs/specs/
 * cch-expiry-dependency.md): the outgoing route may take at most half of what is left of the
 * incoming side's final expiry since the order was made, and no less than the outgoing invoice's
 * own final expiry; and an order unfinished after `order_expiry_delta_seconds` fails.
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { resolveCchConfig } from '../../src/cch/config.ts';
import type { FiberAgent } from '../../src/cch/fiber-agent.ts';
import { connectLnd } from '../../src/cch/lnd.ts';
import { CchService } from '../../src/cch/service.ts';
import { CchOrderStore, cchSchema } from '../../src/cch/store.ts';
import { hexToBytes } from '../../src/codec/hex.ts';
import { LndDouble } from '../../src/devnet/lnd-double.ts';
import { buildInvoice } from '../../src/invoice/builder.ts';
import { encodeInvoice, signInvoice } from '../../src/invoice/codec.ts';
import type { StoreChange } from '../../src/store/changes.ts';
import { openDatabase } from '../../src/store/db.ts';
import { tempDir } from '../helpers/node-process.ts';

const UDT = { code_hash: `0x${'22'.repeat(32)}`, hash_type: 'type' as const, args: '0x01' };
const silent = process.env.DEBUG_CCH
  ? {
      info: (_o: object, m: string) => console.log(Date.now() % 100000, m),
      warn: (_o: object, m: string) => console.log(Date.now() % 100000, m),
      error: (_o: object, m: string) => console.log(Date.now() % 100000, m),
    }
  : { info() {}, warn() {}, error() {} };

let double: LndDouble;
let service: CchService | undefined;

beforeAll(async () => {
  double = await LndDouble.start();
});
afterEach(async () => {
  await service?.stop();
  service = undefined;
});
afterAll(async () => {
  await double?.stop();
});

/** The hub's Fiber node as far as these rules need it: invoices it makes, calls it gets, changes it sends. */
function recordingNode() {
  const calls: { method: string; params: Record<string, unknown> }[] = [];
  let feed: (c: StoreChange) => void = () => {};
  const agent: FiberAgent = {
    async call(method, params: Record<string, unknown>) {
      calls.push({ method, params });
      if (method === 'new_invoice') {
        const inv = buildInvoice({
          currency: 'Fibd',
          amount: BigInt(params.amount as string),
          paymentHash: hexToBytes(params.payment_hash),
          attrs: [
            { kind: 'FinalHtlcMinimumExpiryDelta', value: BigInt(params.final_expiry_delta as string) },
            { kind: 'HashAlgorithm', value: 'sha256' },
          ],
          timestamp: BigInt(Date.now()),
        });
        return { invoice_address: encodeInvoice(signInvoice(inv, randomBytes(32))) };
      }
      if (method === 'get_invoice') return { status: 'Open' };
      return null;
    },
    subscribe(listener, onConnected) {
      feed = listener;
      onConnected();
      return () => {};
    },
  };
  return { agent, calls, push: (c: StoreChange) => feed(c) };
}

function startService(node: ReturnType<typeof recordingNode>, clock: { ms: number }) {
  const dir = tempDir('strand-cch-service-');
  const config = resolveCchConfig(
    {
      wrapped_btc_type_script: UDT,
      lnd_rpc_url: double.url,
      order_expiry_delta_seconds: 36 * 3600,
      base_fee_sats: 0n,
      fee_rate_per_million_sats: 1n,
      btc_final_tlc_expiry_delta_blocks: 180,
      ckb_final_tlc_expiry_delta_seconds: 30 * 3600,
      min_outgoing_invoice_expiry_delta_seconds: 6 * 3600,
    },
    dir,
  );
  const store = new CchOrderStore(openDatabase(path.join(dir, 'cch.db'), [cchSchema]));
  // Its own client: a service closes its client when it stops.
  const lightning = connectLnd({
    url: double.url,
    certPath: double.certPath,
    macaroonPath: double.macaroonPath,
  });
  service = new CchService({
    config,
    store,
    lightning,
    fiber: node.agent,
    currency: 'Fibd',
    log: silent,
    now: () => clock.ms,
    expiryCheckMs: 50,
    retryBaseMs: 100,
  });
  service.start();
  return { service, store };
}

const until = async <T>(fn: () => T, pred: (v: T) => boolean): Promise<T> => {
  for (let i = 0; i < 200; i++) {
    const v = fn();
    if (pred(v)) return v;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error('condition not reached');
};

describe('fnn’s route expiry check (send_btc: 30 h of Fiber final expiry in, BOLT 11 with 40 blocks out)', () => {
  // Outgoing minimum: 40 blocks × 600 s = 24 000 s. Half of (108 000 s − elapsed) stays ≥ 24 000 s up to 60 000 s.
  it('pays with cltv_limit = half the time left in blocks while that covers the invoice’s final CLTV', async () => {
    const clock = { ms: Date.now() };
    const node = recordingNode();
    const { service: hub, store } = startService(node, clock);
    const out = double.outsideInvoice({ amountSat: 1000, minFinalCltv: 40 });
    await hub.sendBtc(out.request, 'Fibd');
    clock.ms += 60_000 * 1000;
    node.push({ PutCkbInvoiceStatus: { payment_hash: out.paymentHash, invoice_status: 'Received' } });
    const order = await until(
      () => store.get(out.paymentHash)!,
      (o) => o.status === 'OutgoingSuccess' || o.status === 'Failed',
    );
    expect(order.status).toBe('OutgoingSuccess');
    expect(double.payments.get(out.paymentHash.slice(2))?.cltvLimit).toBe(40);
    expect(node.calls.find((c) => c.method === 'settle_invoice')?.params).toEqual({
      payment_hash: out.paymentHash,
      payment_preimage: out.preimage,
    });
  });

  it('fails the order without paying, and refunds the Fiber side, once half the time left is below it', async () => {
    const clock = { ms: Date.now() };
    const node = recordingNode();
    const { service: hub, store } = startService(node, clock);
    const out = double.outsideInvoice({ amountSat: 1000, minFinalCltv: 40 });
    await hub.sendBtc(out.request, 'Fibd');
    clock.ms += 61_000 * 1000;
    node.push({ PutCkbInvoiceStatus: { payment_hash: out.paymentHash, invoice_status: 'Received' } });
    const order = await until(
      () => store.get(out.paymentHash)!,
      (o) => o.status === 'Failed' && !!o.incomingCancelled,
    );
    expect(order.failureReason).toMatch(
      /^Insufficient HTLC expiry delta: max outgoing route expiry \(23500 seconds\) is less than the outgoing invoice's minimum final expiry \(24000 seconds\)/,
    );
    expect(double.payments.has(out.paymentHash.slice(2))).toBe(false);
    expect(node.calls.filter((c) => c.method === 'cancel_invoice').map((c) => c.params)).toEqual([
      { payment_hash: out.paymentHash },
    ]);
  });
});

describe('order expiry', () => {
  it('fails an order still Pending after order_expiry_delta_seconds and cancels its incoming invoice', async () => {
    const clock = { ms: Date.now() };
    const node = recordingNode();
    const { service: hub, store } = startService(node, clock);
    const out = double.outsideInvoice({ amountSat: 1000 });
    await hub.sendBtc(out.request, 'Fibd');
    clock.ms += 36 * 3600 * 1000;
    await new Promise((r) => setTimeout(r, 200));
    expect(store.get(out.paymentHash)?.status).toBe('Pending');
    clock.ms += 1000 + 1000;
    const order = await until(
      () => store.get(out.paymentHash)!,
      (o) => o.status === 'Failed' && !!o.incomingCancelled,
    );
    expect(order.failureReason).toBe('Order expired');
    expect(node.calls.some((c) => c.method === 'cancel_invoice')).toBe(true);
  });
});

describe('order expiry with the Lightning payment in flight', () => {
  it('fails the order but does not cancel the held Fiber payment: the outgoing one may still succeed', async () => {
    const clock = { ms: Date.now() };
    const node = recordingNode();
    const { service: hub, store } = startService(node, clock);
    double.payeeBehaviour = 'hold';
    try {
      const out = double.outsideInvoice({ amountSat: 1000 });
      await hub.sendBtc(out.request, 'Fibd');
      node.push({ PutCkbInvoiceStatus: { payment_hash: out.paymentHash, invoice_status: 'Received' } });
      await until(
        () => store.get(out.paymentHash)!,
        (o) => o.status === 'OutgoingInFlight',
      );
      clock.ms += (36 * 3600 + 2) * 1000;
      const order = await until(
        () => store.get(out.paymentHash)!,
        (o) => o.status === 'Failed',
      );
      expect(order).toMatchObject({ failureReason: 'Order expired', keepIncoming: true });
      await new Promise((r) => setTimeout(r, 200));
      expect(node.calls.some((c) => c.method === 'cancel_invoice')).toBe(false);
      double.releasePayment(out.paymentHash, 'fail');
    } finally {
      double.payeeBehaviour = 'succeed';
    }
  });
});

describe('a Lightning node that does not answer', () => {
  it('retries the payment with backoff until LND answers, then completes the swap', async () => {
    const clock = { ms: Date.now() };
    const node = recordingNode();
    const { service: hub, store } = startService(node, clock);
    const out = double.outsideInvoice({ amountSat: 1000 });
    await hub.sendBtc(out.request, 'Fibd');
    double.unavailable = true;
    try {
      node.push({ PutCkbInvoiceStatus: { payment_hash: out.paymentHash, invoice_status: 'Received' } });
      await until(
        () => store.get(out.paymentHash)!,
        (o) => o.status === 'IncomingAccepted',
      );
      await new Promise((r) => setTimeout(r, 300));
      // Refused while down: nothing sent, the order waits (UNAVAILABLE is not a permanent failure).
      expect(double.payments.has(out.paymentHash.slice(2))).toBe(false);
      expect(store.get(out.paymentHash)?.status).toBe('IncomingAccepted');
    } finally {
      double.unavailable = false;
      if (process.env.DEBUG_CCH) console.log(Date.now() % 100000, 'lnd back');
    }
    const order = await until(
      () => store.get(out.paymentHash)!,
      (o) => o.status === 'OutgoingSuccess' || o.status === 'Failed',
    );
    expect(order.status).toBe('OutgoingSuccess');
    expect(order.paymentPreimage).toBe(out.preimage);
  });
});
