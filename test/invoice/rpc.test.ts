/**
 * The invoice RPC module over a real HTTP server (the project's JSON-RPC server, a real socket,
 * a real SQLite file), as an application calls it.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bytesToHex } from '../../src/codec/hex.ts';
import { sha256 } from '../../src/crypto/hash.ts';
import { publicKeyOf } from '../../src/crypto/identity.ts';
import { createInvoiceService, type InvoiceService } from '../../src/invoice/service.ts';
import { invoiceSchema } from '../../src/invoice/store.ts';
import { OPEN_ACCESS } from '../../src/rpc/auth.ts';
import { invoiceMethods, newInvoiceParams } from '../../src/rpc/modules/invoice.ts';
import { type RpcServer, startRpcServer } from '../../src/rpc/server.ts';
import { type Db, openDatabase } from '../../src/store/db.ts';
import * as V from './vectors.ts';

const SK = new Uint8Array(
  fs.readFileSync(new URL('../fixtures/fiber-test-nodes/2/fiber/sk', import.meta.url)),
);
const PAYEE = bytesToHex(publicKeyOf(SK), false);

let dir: string;
let db: Db;
let server: RpcServer;
let svc: InvoiceService;
let clock = Date.now();

interface Reply {
  result?: any;
  error?: { code: number; message: string; data?: unknown };
}

async function call(method: string, params: unknown[] = []): Promise<Reply> {
  const res = await fetch(server.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return (await res.json()) as Reply;
}

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'strand-invoice-rpc-'));
  db = openDatabase(path.join(dir, 'strand.db'), [invoiceSchema]);
  svc = createInvoiceService({ db, nodeSecretKey: SK, currency: 'Fibd', now: () => clock });
  server = await startRpcServer({
    listeningAddr: '127.0.0.1:0',
    methods: invoiceMethods(svc),
    auth: OPEN_ACCESS,
    corsEnabled: false,
    corsAllowedOrigins: [],
    maxBodySize: 1 << 20,
  });
});

afterAll(async () => {
  await server.close();
  db.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('new_invoice', () => {
  it('returns the seed shape: invoice_address and invoice with PascalCase attrs', async () => {
    const preimage = '0x' + '42'.repeat(32);
    const r = await call('new_invoice', [
      {
        amount: '0x5f5e100',
        currency: 'Fibd',
        description: 'test invoice',
        expiry: '0xe10',
        final_cltv: '0x28',
        payment_preimage: preimage,
        hash_algorithm: 'sha256',
      },
    ]);
    expect(r.error).toBeUndefined();
    const { invoice_address, invoice } = r.result;
    expect(invoice_address).toMatch(/^fibd1000000001p/);
    expect(invoice.currency).toBe('Fibd');
    expect(invoice.amount).toBe('0x5f5e100');
    expect(invoice.signature).toMatch(/^(0[0-9a-f]|1[0-9a-f]){104}$/);
    expect(invoice.data.payment_hash).toBe(bytesToHex(sha256(Buffer.from('42'.repeat(32), 'hex'))));
    expect(invoice.data.timestamp).toBe('0x' + clock.toString(16));
    expect(invoice.data.attrs).toEqual([
      { Description: 'test invoice' },
      { ExpiryTime: { secs: 3600, nanos: 0 } },
      { FinalHtlcMinimumExpiryDelta: '0x927c00' },
      { HashAlgorithm: 'sha256' },
      { PayeePublicKey: PAYEE },
    ]);
    const parsed = await call('parse_invoice', [{ invoice: invoice_address }]);
    expect(parsed.result.invoice).toEqual(invoice);
  });

  it('accepts a UDT script, MPP and trampoline flags', async () => {
    const r = await call('new_invoice', [
      {
        amount: '0x1',
        currency: 'Fibd',
        allow_mpp: true,
        allow_trampoline_routing: true,
        udt_type_script: {
          code_hash: '0x1142755a044bf2ee358cba9f2da187ce928c91cd4dc8692ded0337efa677d21a',
          hash_type: 'type',
          args: '0x878fcc6f1f08d48e87bb1c3b3d5083f23f8a39c5d5c764f253b55b998526439b',
        },
      },
    ]);
    const attrs = r.result.invoice.data.attrs;
    expect(attrs).toContainEqual({ Feature: ['BASIC_MPP_OPTIONAL', 'TRAMPOLINE_ROUTING_OPTIONAL'] });
    expect(attrs).toContainEqual({
      UdtScript:
        '0x550000001000000030000000310000001142755a044bf2ee358cba9f2da187ce928c91cd4dc8692ded0337efa677d21a0120000000878fcc6f1f08d48e87bb1c3b3d5083f23f8a39c5d5c764f253b55b998526439b',
    });
    expect(attrs.find((a: object) => 'PaymentSecret' in a).PaymentSecret).toMatch(/^0x[0-9a-f]{64}$/);
  });

  it('refuses with the reference texts (-32000, params echoed) and bad params with -32602', async () => {
    const bad = { amount: '0x1', currency: 'Fibt' };
    const r1 = await call('new_invoice', [bad]);
    // data as fnn 0.8 answers it (captured from the reference node): every field, absent ones null
    expect(r1.error).toEqual({
      code: -32000,
      message: 'Currency must be Fibd with the chain network',
      data: {
        amount: '0x1',
        description: null,
        currency: 'Fibt',
        payment_preimage: null,
        payment_hash: null,
        expiry: null,
        fallback_address: null,
        final_expiry_delta: null,
        udt_type_script: null,
        hash_algorithm: null,
        allow_mpp: null,
        allow_trampoline_routing: null,
      },
    });
    const both = {
      amount: '0x1',
      currency: 'Fibd',
      payment_preimage: '0x' + '01'.repeat(32),
      payment_hash: '0x' + '02'.repeat(32),
    };
    expect((await call('new_invoice', [both])).error).toMatchObject({
      code: -32000,
      message: 'Both payment_hash and payment_preimage are set',
    });
    const dup = { amount: '0x1', currency: 'Fibd', payment_hash: '0x' + '03'.repeat(32) };
    expect((await call('new_invoice', [dup])).result).toBeDefined();
    expect((await call('new_invoice', [dup])).error).toMatchObject({
      code: -32000,
      message: 'invoice already exists',
    });
    expect(
      (await call('new_invoice', [{ amount: '0x1', currency: 'Fibd', final_expiry_delta: '0x1' }])).error,
    ).toMatchObject({
      code: -32000,
      message: 'final_expiry_delta must be greater than or equal to 9600000',
    });
    expect(
      (await call('new_invoice', [{ amount: '0x1', currency: 'Fibd', description: 'd'.repeat(640) }])).error
        ?.message,
    ).toBe('Description with length of 640 is too long, max length is 639');
    for (const params of [
      { currency: 'Fibd' },
      { amount: '0x01', currency: 'Fibd' },
      { amount: '0x1', currency: 'fibd' },
      { amount: '0x1', currency: 'Fibd', payment_hash: '0x12' },
      { amount: '0x1', currency: 'Fibd', hash_algorithm: 'md5' },
      { amount: '0x1', currency: 'Fibd', expiry: '0x10000000000000000' },
    ]) {
      expect((await call('new_invoice', [params])).error?.code).toBe(-32602);
    }
  });

  it('treats null optional fields as absent, as serde does', () => {
    const p = newInvoiceParams.parse({ amount: '0x0', currency: 'Fibd', description: null, expiry: null });
    expect(p.description).toBeUndefined();
    expect(p.expiry).toBeUndefined();
    expect(p.amount).toBe(0n);
  });
});

describe('parse_invoice', () => {
  it('parses the reference node invoices', async () => {
    const r = await call('parse_invoice', [{ invoice: V.V2 }]);
    expect(r.result.invoice.data.payment_hash).toBe(
      '0x9d765b2d4cddf925ea9132acf48916144f12cbdb3208908ca0ca7fa53962f3f7',
    );
    expect(r.result.invoice.data.attrs[2]).toEqual({
      UdtScript:
        '0x550000001000000030000000310000001142755a044bf2ee358cba9f2da187ce928c91cd4dc8692ded0337efa677d21a0120000000878fcc6f1f08d48e87bb1c3b3d5083f23f8a39c5d5c764f253b55b998526439b',
    });
    expect((await call('parse_invoice', [{ invoice: V.V4 }])).result.invoice.signature).toBeNull();
  });

  it('answers malformed strings with -32000 and the reason', async () => {
    expect((await call('parse_invoice', [{ invoice: V.V4_TWIN }])).error).toEqual({
      code: -32000,
      message: 'Bech32 error: invalid checksum',
      data: { invoice: V.V4_TWIN },
    });
    expect((await call('parse_invoice', [{ invoice: 'hello' }])).error?.message).toBe(
      'Bech32 error: missing human-readable separator, "1"',
    );
    expect((await call('parse_invoice', [{ invoice: 42 }])).error?.code).toBe(-32602);
    expect((await call('parse_invoice', [{}])).error?.code).toBe(-32602);
  });
});

describe('get_invoice, cancel_invoice, settle_invoice', () => {
  it('follow the status machine with the reference texts', async () => {
    const created = await call('new_invoice', [{ amount: '0x64', currency: 'Fibd', expiry: '0x3c' }]);
    const hash = created.result.invoice.data.payment_hash;
    const got = await call('get_invoice', [{ payment_hash: hash }]);
    expect(got.result).toEqual({ ...created.result, status: 'Open' });
    // input without 0x is accepted
    expect((await call('get_invoice', [{ payment_hash: hash.slice(2) }])).result.status).toBe('Open');
    clock += 61_000;
    expect((await call('get_invoice', [{ payment_hash: hash }])).result.status).toBe('Expired');
    expect((await call('cancel_invoice', [{ payment_hash: hash }])).result.status).toBe('Cancelled');
    expect((await call('cancel_invoice', [{ payment_hash: hash }])).error).toEqual({
      code: -32000,
      message: 'invoice can not be canceled, current status: Cancelled',
      data: { payment_hash: hash },
    });
    const unknown = '0x' + 'ee'.repeat(32);
    expect((await call('get_invoice', [{ payment_hash: unknown }])).error?.message).toBe('invoice not found');
    expect((await call('cancel_invoice', [{ payment_hash: unknown }])).error?.message).toBe(
      'invoice not found',
    );
    expect((await call('get_invoice', [{ payment_hash: '0x1234' }])).error?.code).toBe(-32602);
  });

  it('settle_invoice releases a hold invoice once Received, and cancel of a paid one is refused', async () => {
    const preimage = '0x' + '5a'.repeat(32);
    const hash = bytesToHex(sha256(Buffer.from('5a'.repeat(32), 'hex')));
    await call('new_invoice', [
      { amount: '0x64', currency: 'Fibd', payment_hash: hash, hash_algorithm: 'sha256' },
    ]);
    expect(
      (await call('settle_invoice', [{ payment_hash: hash, payment_preimage: preimage }])).error?.message,
    ).toBe('Invoice is still open');
    expect(
      (await call('settle_invoice', [{ payment_hash: hash, payment_preimage: '0x' + '00'.repeat(32) }])).error
        ?.message,
    ).toBe('Hash mismatch');
    svc.markReceived(hash, 100n);
    expect((await call('get_invoice', [{ payment_hash: hash }])).result.status).toBe('Received');
    expect(
      (await call('settle_invoice', [{ payment_hash: hash, payment_preimage: preimage }])).result,
    ).toEqual({});
    expect((await call('get_invoice', [{ payment_hash: hash }])).result.status).toBe('Paid');
    expect((await call('cancel_invoice', [{ payment_hash: hash }])).error?.message).toBe(
      'invoice can not be canceled, current status: Paid',
    );
    expect(
      (await call('settle_invoice', [{ payment_hash: hash, payment_preimage: preimage }])).error?.message,
    ).toBe('Invoice is already paid');
    expect((await call('settle_invoice', [{ payment_hash: hash }])).error?.code).toBe(-32602);
    expect(
      (await call('settle_invoice', [{ payment_hash: '0x' + 'ee'.repeat(32), payment_preimage: preimage }]))
        .error?.message,
    ).toBe('Invoice not found');
  });
});
