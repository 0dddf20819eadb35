/**
 * The hub's Lightning client (`src/cch/lnd.ts`, LND's gRPC through the `lightning` package)
 * against the LND double: TLS with the double's certificate, the macaroon checked on every call,
 * hold invoices (add, subscribe, accept by the outside payer, settle / cancel), and payments
 * (SendPaymentV2 to an outside payee, TrackPaymentV2, a second send of the same hash).
 */

import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { sha256 } from '@noble/hashes/sha2.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodePayReq } from '../../src/cch/bolt11.ts';
import {
  connectLnd,
  type LightningBackend,
  type LndCallError,
  type PaymentUpdate,
} from '../../src/cch/lnd.ts';
import type { InvoiceStatus } from '../../src/cch/order.ts';
import { LndDouble } from '../../src/devnet/lnd-double.ts';

let double: LndDouble;
let lnd: LightningBackend;

beforeAll(async () => {
  double = await LndDouble.start();
  lnd = connectLnd({ url: double.url, certPath: double.certPath, macaroonPath: double.macaroonPath });
});
afterAll(async () => {
  lnd?.close();
  await double?.stop();
});

const newHash = () => {
  const preimage = randomBytes(32);
  return {
    preimage: `0x${preimage.toString('hex')}`,
    hash: `0x${Buffer.from(sha256(preimage)).toString('hex')}`,
  };
};

function statuses(hash: string): {
  seen: InvoiceStatus[];
  next: (s: InvoiceStatus) => Promise<void>;
  stop: () => void;
} {
  const seen: InvoiceStatus[] = [];
  const waiters: [InvoiceStatus, () => void][] = [];
  const stop = lnd.trackInvoice(
    hash,
    (s) => {
      seen.push(s);
      for (const [want, done] of waiters) if (want === s) done();
    },
    () => {},
  );
  return {
    seen,
    stop,
    next: (s) => (seen.includes(s) ? Promise.resolve() : new Promise((r) => waiters.push([s, r]))),
  };
}

describe('LND client against the double', () => {
  it('adds a hold invoice as a real BOLT 11 request, then follows it to SETTLED', async () => {
    const { hash, preimage } = newHash();
    const request = await lnd.addHoldInvoice({
      paymentHash: hash,
      valueMsat: 150_000n,
      expirySeconds: 7200,
      cltvExpiry: 180,
    });
    const d = decodePayReq(request);
    expect(d).toMatchObject({
      network: 'Regtest',
      paymentHash: hash,
      amountMsat: 150_000n,
      minFinalCltvExpiryDelta: 180,
    });
    expect(d.expiresAt - d.timestamp).toBe(7200);
    const track = statuses(hash);
    await track.next('Open');
    await expect(lnd.settleInvoice(preimage)).rejects.toThrow(/open/);
    const paid = double.payHoldInvoice(request);
    await track.next('Received');
    await lnd.settleInvoice(preimage);
    await track.next('Paid');
    expect(await paid).toBe(preimage);
    expect(track.seen).toEqual(['Open', 'Received', 'Paid']);
    track.stop();
  });

  it('cancels an accepted hold invoice: the outside payer is refunded', async () => {
    const { hash } = newHash();
    const request = await lnd.addHoldInvoice({
      paymentHash: hash,
      valueMsat: 1000n,
      expirySeconds: 3600,
      cltvExpiry: 80,
    });
    const paid = double.payHoldInvoice(request);
    await lnd.cancelInvoice(hash);
    await expect(paid).rejects.toThrow(/canceled/);
    expect(double.invoices.get(hash.slice(2))?.state).toBe('CANCELED');
  });

  it('pays an outside invoice with fnn’s cltv_limit and timeout, learns the preimage; a second send is AlreadyExists', async () => {
    const out = double.outsideInvoice({ amountSat: 500 });
    const updates: PaymentUpdate[] = [];
    const ended = new Promise<void>((resolve, reject) =>
      lnd.sendPayment(
        { payReq: out.request, cltvLimit: 90, timeoutSeconds: 60 },
        (u) => {
          updates.push(u);
          if (u.status === 'Success') resolve();
        },
        reject,
      ),
    );
    await ended;
    expect(updates.at(-1)).toEqual({ status: 'Success', preimage: out.preimage });
    expect(double.payments.get(out.paymentHash.slice(2))).toMatchObject({
      cltvLimit: 90,
      timeoutSeconds: 60,
    });
    const again = await new Promise<LndCallError>((resolve) =>
      lnd.sendPayment({ payReq: out.request, cltvLimit: 90, timeoutSeconds: 60 }, () => {}, resolve),
    );
    expect(again.code).toBe(6);
    const tracked = await new Promise<PaymentUpdate>((resolve, reject) =>
      lnd.trackPayment(out.paymentHash, resolve, reject),
    );
    expect(tracked).toEqual({ status: 'Success', preimage: out.preimage });
  });

  it('a payment the payee cannot take ends Failed with the reason', async () => {
    double.payeeBehaviour = 'fail';
    try {
      const out = double.outsideInvoice({ amountSat: 10 });
      const last = await new Promise<PaymentUpdate>((resolve, reject) =>
        lnd.sendPayment(
          { payReq: out.request, cltvLimit: 90, timeoutSeconds: 60 },
          (u) => u.status === 'Failed' && resolve(u),
          reject,
        ),
      );
      expect(last.failureReason).toMatch(/FAILURE_REASON_NO_ROUTE/);
    } finally {
      double.payeeBehaviour = 'succeed';
    }
  });

  it('refuses a client without the right macaroon (UNAUTHENTICATED)', async () => {
    const wrong = path.join(double.dir, 'wrong.macaroon');
    fs.writeFileSync(wrong, randomBytes(64));
    const other = connectLnd({ url: double.url, certPath: double.certPath, macaroonPath: wrong });
    try {
      await expect(other.cancelInvoice(newHash().hash)).rejects.toMatchObject({ code: 16 });
    } finally {
      other.close();
    }
  });
});
