/**
 * Every invoice method, and each of its refusals, against a real `strand node` process over HTTP.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bytesToHex } from '../../src/codec/hex.ts';
import { ckbHash } from '../../src/crypto/hash.ts';
import { type NodeProcess, startNode } from '../helpers/node-process.ts';
import * as V from './vectors.ts';

let node: NodeProcess;

beforeAll(async () => {
  node = await startNode();
});

afterAll(async () => {
  await node?.stop();
});

describe('invoice module of a running node (dev chain: Fibd)', () => {
  it('new_invoice → get_invoice → cancel_invoice, and the refusals', async () => {
    const created = await node.call('new_invoice', [
      { amount: '0x5f5e100', currency: 'Fibd', description: 'process test', expiry: '0xe10' },
    ]);
    expect(created.error).toBeUndefined();
    const hash = created.result.invoice.data.payment_hash;
    expect(created.result.invoice_address).toMatch(/^fibd1000000001p/);
    expect(created.result.invoice.data.attrs).toContainEqual({ ExpiryTime: { secs: 3600, nanos: 0 } });

    const parsed = await node.call('parse_invoice', [{ invoice: created.result.invoice_address }]);
    expect(parsed.result.invoice).toEqual(created.result.invoice);

    expect((await node.call('get_invoice', [{ payment_hash: hash }])).result.status).toBe('Open');
    expect((await node.call('cancel_invoice', [{ payment_hash: hash }])).result.status).toBe('Cancelled');
    expect((await node.call('cancel_invoice', [{ payment_hash: hash }])).error).toMatchObject({
      code: -32000,
      message: 'invoice can not be canceled, current status: Cancelled',
    });

    expect((await node.call('new_invoice', [{ amount: '0x1', currency: 'Fibt' }])).error).toMatchObject({
      code: -32000,
      message: 'Currency must be Fibd with the chain network',
    });
    const both = {
      amount: '0x1',
      currency: 'Fibd',
      payment_hash: '0x' + '01'.repeat(32),
      payment_preimage: '0x' + '02'.repeat(32),
    };
    expect((await node.call('new_invoice', [both])).error?.message).toBe(
      'Both payment_hash and payment_preimage are set',
    );
    const hold = { amount: '0x1', currency: 'Fibd', payment_hash: bytesToHex(ckbHash(new Uint8Array(32))) };
    expect((await node.call('new_invoice', [hold])).result).toBeDefined();
    expect((await node.call('new_invoice', [hold])).error?.message).toBe('invoice already exists');
    expect((await node.call('new_invoice', [{ amount: '0x01', currency: 'Fibd' }])).error?.code).toBe(-32602);
  });

  it('settle_invoice refuses an Open hold invoice and an expired one', async () => {
    const hash = bytesToHex(ckbHash(new Uint8Array(32)));
    const r = await node.call('settle_invoice', [
      { payment_hash: hash, payment_preimage: '0x' + '00'.repeat(32) },
    ]);
    expect(r.error).toMatchObject({ code: -32000, message: 'Invoice is still open' });
    const preimage = new Uint8Array(32).fill(3);
    const expiring = {
      amount: '0x1',
      currency: 'Fibd',
      payment_hash: bytesToHex(ckbHash(preimage)),
      expiry: '0x1',
    };
    expect((await node.call('new_invoice', [expiring])).result).toBeDefined();
    await new Promise((res) => setTimeout(res, 1100));
    const h = expiring.payment_hash;
    expect((await node.call('get_invoice', [{ payment_hash: h }])).result.status).toBe('Expired');
    expect(
      (await node.call('settle_invoice', [{ payment_hash: h, payment_preimage: bytesToHex(preimage) }])).error
        ?.message,
    ).toBe('Invoice is already expired');
    expect(
      (await node.call('settle_invoice', [{ payment_hash: h, payment_preimage: '0x' + '00'.repeat(32) }]))
        .error?.message,
    ).toBe('Hash mismatch');
  });

  it('parse_invoice reads the reference invoices and rejects malformed strings', async () => {
    expect((await node.call('parse_invoice', [{ invoice: V.V1 }])).result.invoice.data.attrs[3]).toEqual({
      PayeePublicKey: V.V1_V2_PAYEE,
    });
    expect((await node.call('parse_invoice', [{ invoice: V.V4_TWIN }])).error).toMatchObject({
      code: -32000,
      message: 'Bech32 error: invalid checksum',
    });
    expect((await node.call('parse_invoice', [{ invoice: 'fibt1qqqqqqqqq' }])).error?.code).toBe(-32000);
    expect((await node.call('parse_invoice', [{ invoice: null }])).error?.code).toBe(-32602);
  });
});

describe('final_expiry_delta follows the configured epoch (fiber.milli_seconds_per_epoch)', () => {
  const invoice = (node: NodeProcess, delta: number) =>
    node.call('new_invoice', [
      { amount: '0x1', currency: 'Fibd', final_expiry_delta: `0x${delta.toString(16)}` },
    ]);

  it('a dev chain without the field keeps the 4-hour epoch bound (9,600,000 ms)', async () => {
    expect((await invoice(node, 9_599_999)).error).toMatchObject({
      code: -32000,
      message: 'final_expiry_delta must be greater than or equal to 9600000',
    });
    expect((await invoice(node, 9_600_000)).result).toBeDefined();
  });

  it('a 1-minute epoch: 2/3 of it (40,000 ms) is the least delta and the default', async () => {
    const short = await startNode({
      config: {
        fiber: { chain: 'dev', listening_addr: '/ip4/127.0.0.1/tcp/0', milli_seconds_per_epoch: 60_000 },
        rpc: { listening_addr: '127.0.0.1:0' },
        services: ['fiber', 'rpc'],
      },
    });
    try {
      // Below the 4-hour bound, above the derived one: accepted, and carried by the invoice.
      const ok = await invoice(short, 40_000);
      expect(ok.error).toBeUndefined();
      expect(ok.result.invoice.data.attrs).toContainEqual({ FinalHtlcMinimumExpiryDelta: '0x9c40' });
      expect((await invoice(short, 39_999)).error).toMatchObject({
        code: -32000,
        message: 'final_expiry_delta must be greater than or equal to 40000',
      });
      const dflt = await short.call('new_invoice', [{ amount: '0x1', currency: 'Fibd' }]);
      expect(dflt.result.invoice.data.attrs).toContainEqual({ FinalHtlcMinimumExpiryDelta: '0x9c40' });
    } finally {
      await short.stop();
    }
  });
});
