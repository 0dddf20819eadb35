import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { minTlcExpiryDelta } from '../../src/codec/epoch-rules.ts';
import { DomainError } from '../../src/codec/errors.ts';
import { bytesToHex } from '../../src/codec/hex.ts';
import { ckbHash, sha256 } from '../../src/crypto/hash.ts';
import { publicKeyOf } from '../../src/crypto/identity.ts';
import { decodeInvoice, recoverPayee } from '../../src/invoice/codec.ts';
import {
  createInvoiceService,
  type InvoiceService,
  type InvoiceServiceOptions,
  type InvoiceStoreChange,
} from '../../src/invoice/service.ts';
import { invoiceSchema } from '../../src/invoice/store.ts';
import { allowsMpp, allowsTrampoline, findAttr } from '../../src/invoice/types.ts';
import { type Db, openDatabase } from '../../src/store/db.ts';

const SK = new Uint8Array(
  fs.readFileSync(new URL('../fixtures/fiber-test-nodes/1/fiber/sk', import.meta.url)),
);
const PREIMAGE = '0x' + '11'.repeat(32);
const T0 = 1_700_000_000_000;

let dir: string;
let db: Db;
let clock: number;
let changes: InvoiceStoreChange[];

function service(extra: Partial<InvoiceServiceOptions> = {}): InvoiceService {
  return createInvoiceService({
    db,
    nodeSecretKey: SK,
    currency: 'Fibd',
    now: () => clock,
    onChange: (c) => changes.push(c),
    ...extra,
  });
}

function domainError(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(DomainError);
    return (e as Error).message;
  }
  throw new Error('expected a DomainError');
}

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'strand-invoice-'));
  db = openDatabase(path.join(dir, 'strand.db'), [invoiceSchema]);
  clock = T0;
  changes = [];
});

afterEach(() => {
  db.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('new invoices', () => {
  it('are signed by the node key, carry the reference attributes and are stored Open', () => {
    const svc = service();
    const { invoiceAddress, invoice } = svc.newInvoice({
      amount: 100_000_000n,
      currency: 'Fibd',
      description: 'coffee',
      paymentPreimage: PREIMAGE,
      expiry: 3600n,
      hashAlgorithm: 'sha256',
    });
    expect(invoiceAddress.startsWith('fibd1000000001p')).toBe(true);
    expect(bytesToHex(invoice.data.paymentHash)).toBe(
      bytesToHex(sha256(Buffer.from('11'.repeat(32), 'hex'))),
    );
    expect(invoice.data.timestamp).toBe(BigInt(T0));
    expect(invoice.data.attrs.map((a) => a.kind)).toEqual([
      'Description',
      'ExpiryTime',
      'FinalHtlcMinimumExpiryDelta',
      'HashAlgorithm',
      'PayeePublicKey',
    ]);
    expect(findAttr(invoice, 'FinalHtlcMinimumExpiryDelta')?.value).toBe(9_600_000n);
    expect(recoverPayee(decodeInvoice(invoiceAddress))).toEqual(publicKeyOf(SK));
    const got = svc.getInvoice(invoice.data.paymentHash);
    expect(got.status).toBe('Open');
    expect(got.invoiceAddress).toBe(invoiceAddress);
    expect(bytesToHex(got.preimage!)).toBe(PREIMAGE);
    const hash = bytesToHex(invoice.data.paymentHash);
    expect(changes).toEqual([
      { PutCkbInvoiceStatus: { payment_hash: hash, invoice_status: 'Open' } },
      { PutPreimage: { payment_hash: hash, payment_preimage: PREIMAGE } },
    ]);
  });

  it('hash the preimage with ckb_hash by default and draw a random preimage when none is given', () => {
    const svc = service();
    const a = svc.newInvoice({ amount: 1n, currency: 'Fibd', paymentPreimage: PREIMAGE });
    expect(a.invoice.data.paymentHash).toEqual(ckbHash(Buffer.from('11'.repeat(32), 'hex')));
    const b = svc.newInvoice({ amount: 1n, currency: 'Fibd' });
    const c = svc.newInvoice({ amount: 1n, currency: 'Fibd' });
    const pb = svc.getPreimage(b.invoice.data.paymentHash)!;
    expect(ckbHash(pb)).toEqual(b.invoice.data.paymentHash);
    expect(b.invoice.data.paymentHash).not.toEqual(c.invoice.data.paymentHash);
  });

  it('store hold invoices (hash only) without a preimage', () => {
    const svc = service();
    const hash = '0x' + 'ab'.repeat(32);
    svc.newInvoice({ amount: 5n, currency: 'Fibd', paymentHash: hash });
    expect(svc.getInvoice(hash).preimage).toBeUndefined();
    expect(changes).toEqual([{ PutCkbInvoiceStatus: { payment_hash: hash, invoice_status: 'Open' } }]);
  });

  it('set MPP (with a payment secret), trampoline and UDT attributes', () => {
    const svc = service();
    const script = new Uint8Array(
      Buffer.from('35000000100000003000000031000000' + '11'.repeat(32) + '0100000000', 'hex'),
    );
    const { invoice } = svc.newInvoice({
      amount: 1n,
      currency: 'Fibd',
      allowMpp: true,
      allowTrampolineRouting: true,
      udtTypeScript: script,
      fallbackAddress: 'ckt1qyq',
    });
    expect(allowsMpp(invoice)).toBe(true);
    expect(allowsTrampoline(invoice)).toBe(true);
    expect(findAttr(invoice, 'Feature')?.bytes).toEqual(Uint8Array.of(0b101000));
    expect(findAttr(invoice, 'PaymentSecret')?.value.length).toBe(32);
    expect(findAttr(invoice, 'UdtScript')?.script).toEqual(script);
    expect(findAttr(invoice, 'FallbackAddr')?.value).toBe('ckt1qyq');
    const plain = svc.newInvoice({ amount: 1n, currency: 'Fibd', allowMpp: false });
    expect(allowsMpp(plain.invoice)).toBe(false);
    expect(findAttr(plain.invoice, 'PaymentSecret')).toBeUndefined();
  });

  it('refuse what the reference refuses, with its texts, storing nothing', () => {
    const svc = service();
    expect(domainError(() => svc.newInvoice({ amount: 1n, currency: 'Fibt' }))).toBe(
      'Currency must be Fibd with the chain network',
    );
    expect(
      domainError(() =>
        svc.newInvoice({ amount: 1n, currency: 'Fibd', paymentPreimage: PREIMAGE, paymentHash: PREIMAGE }),
      ),
    ).toBe('Both payment_hash and payment_preimage are set');
    expect(
      domainError(() => svc.newInvoice({ amount: 1n, currency: 'Fibd', description: 'é'.repeat(320) })),
    ).toBe('Description with length of 640 is too long, max length is 639');
    expect(
      svc.newInvoice({ amount: 1n, currency: 'Fibd', description: 'x'.repeat(639) }).invoiceAddress,
    ).toBeTruthy();
    expect(
      domainError(() => svc.newInvoice({ amount: 1n, currency: 'Fibd', finalExpiryDelta: 9_599_999n })),
    ).toBe('final_expiry_delta must be greater than or equal to 9600000');
    expect(
      domainError(() => svc.newInvoice({ amount: 1n, currency: 'Fibd', finalExpiryDelta: 1_209_600_001n })),
    ).toBe('final_expiry_delta must be less than or equal to 1209600000');
    // A node on 2-second epochs (fnn's debug builds): the least delta is 2/3 of one, 1,333 ms.
    const shortEpoch = service({ minFinalExpiryDelta: minTlcExpiryDelta(2000) });
    expect(
      domainError(() => shortEpoch.newInvoice({ amount: 1n, currency: 'Fibd', finalExpiryDelta: 1332n })),
    ).toBe('final_expiry_delta must be greater than or equal to 1333');
    const short = shortEpoch.newInvoice({ amount: 1n, currency: 'Fibd', finalExpiryDelta: 10_000n });
    expect(findAttr(short.invoice, 'FinalHtlcMinimumExpiryDelta')?.value).toBe(10_000n);
    const dflt = shortEpoch.newInvoice({ amount: 3n, currency: 'Fibd' });
    expect(findAttr(dflt.invoice, 'FinalHtlcMinimumExpiryDelta')?.value).toBe(1333n);
    svc.newInvoice({ amount: 1n, currency: 'Fibd', paymentPreimage: PREIMAGE });
    changes = [];
    expect(
      domainError(() => svc.newInvoice({ amount: 2n, currency: 'Fibd', paymentPreimage: PREIMAGE })),
    ).toBe('invoice already exists');
    expect(changes).toEqual([]);
    const noMpp = service({ features: { mpp: false, trampolineRouting: false } });
    expect(domainError(() => noMpp.newInvoice({ amount: 1n, currency: 'Fibd', allowMpp: true }))).toBe(
      'Node does not support MPP, please enable MPP feature',
    );
    expect(
      domainError(() => noMpp.newInvoice({ amount: 1n, currency: 'Fibd', allowTrampolineRouting: true })),
    ).toBe('Node does not support trampoline routing, please enable trampoline routing feature');
  });

  it('refuse an invoice whose string no one could parse (huge fallback address)', () => {
    const svc = service();
    expect(
      domainError(() =>
        svc.newInvoice({
          amount: 1n,
          currency: 'Fibd',
          fallbackAddress: randomBytes(10_000).toString('hex'),
        }),
      ),
    ).toMatch(/^Invoice can not be encoded: Invoice string is too long: \d+ > 8192 characters$/);
    expect(
      domainError(() =>
        svc.newInvoice({ amount: 1n, currency: 'Fibd', fallbackAddress: 'a'.repeat(20_000) }),
      ),
    ).toBe(
      'Invoice can not be encoded: Failed to decompress invoice data: decompressed data exceeds 16384 bytes',
    );
    expect(changes).toEqual([]);
  });

  it('survive a restart: a new service on a reopened database finds them', () => {
    const { invoice, invoiceAddress } = service().newInvoice({ amount: 7n, currency: 'Fibd' });
    db.close();
    db = openDatabase(path.join(dir, 'strand.db'), [invoiceSchema]);
    const again = service().getInvoice(invoice.data.paymentHash);
    expect(again.invoiceAddress).toBe(invoiceAddress);
    expect(again.status).toBe('Open');
  });
});

describe('statuses', () => {
  it('Open reads as Expired after timestamp + expiry, without being stored', () => {
    const svc = service();
    const { invoice } = svc.newInvoice({ amount: 1n, currency: 'Fibd', expiry: 10n });
    const hash = invoice.data.paymentHash;
    clock = T0 + 10_000;
    expect(svc.getInvoice(hash).status).toBe('Open');
    clock = T0 + 10_001;
    expect(svc.getInvoice(hash).status).toBe('Expired');
    expect(domainError(() => svc.markReceived(hash, 1n))).toBe('Invoice is already expired');
    // an expired invoice can still be cancelled (the reference allows anything but Paid/Cancelled)
    expect(svc.cancelInvoice(hash).status).toBe('Cancelled');
  });

  it('invoices without expiry never expire', () => {
    const svc = service();
    const { invoice } = svc.newInvoice({ amount: 1n, currency: 'Fibd' });
    clock = T0 + 100 * 365 * 86_400_000;
    expect(svc.getInvoice(invoice.data.paymentHash).status).toBe('Open');
  });

  it('cancel: Open → Cancelled; refused when Cancelled or Paid', () => {
    const cancelled: string[] = [];
    const svc = service({ onCancel: (h) => cancelled.push(bytesToHex(h)) });
    const a = svc.newInvoice({ amount: 1n, currency: 'Fibd' }).invoice.data.paymentHash;
    changes = [];
    expect(svc.cancelInvoice(a).status).toBe('Cancelled');
    expect(changes).toEqual([
      { PutCkbInvoiceStatus: { payment_hash: bytesToHex(a), invoice_status: 'Cancelled' } },
    ]);
    expect(domainError(() => svc.cancelInvoice(a))).toBe(
      'invoice can not be canceled, current status: Cancelled',
    );
    const b = svc.newInvoice({ amount: 1n, currency: 'Fibd' }).invoice.data.paymentHash;
    svc.markPaid(b);
    expect(domainError(() => svc.cancelInvoice(b))).toBe('invoice can not be canceled, current status: Paid');
    expect(domainError(() => svc.cancelInvoice('0x' + '00'.repeat(32)))).toBe('invoice not found');
    expect(domainError(() => svc.getInvoice('0x' + '00'.repeat(32)))).toBe('invoice not found');
  });

  it('payment side: Open → Received → Paid, with the received amount kept', () => {
    const svc = service();
    const h = svc.newInvoice({ amount: 10n, currency: 'Fibd' }).invoice.data.paymentHash;
    changes = [];
    expect(svc.markReceived(h, 10n)).toBe('Received');
    expect(svc.lookupForPayment(h)?.receivedAmount).toBe(10n);
    expect(svc.markReceived(h, 10n)).toBe('Received');
    expect(svc.markPaid(h)).toBe('Paid');
    expect(svc.markPaid(h)).toBe('Paid');
    expect(
      changes.map((c) => ('PutCkbInvoiceStatus' in c ? c.PutCkbInvoiceStatus.invoice_status : 'x')),
    ).toEqual(['Received', 'Paid']);
    expect(svc.lookupForPayment('0x' + '00'.repeat(32))).toBeUndefined();
    const cancelled = svc.newInvoice({ amount: 1n, currency: 'Fibd' }).invoice.data.paymentHash;
    svc.cancelInvoice(cancelled);
    expect(domainError(() => svc.markReceived(cancelled, 1n))).toBe('Invoice is already cancelled');
  });

  it("marked Paid inside a caller's transaction: reported once it commits, never if it rolls back", async () => {
    const svc = service();
    const paid = svc.newInvoice({ amount: 10n, currency: 'Fibd' }).invoice.data.paymentHash;
    const undone = svc.newInvoice({ amount: 10n, currency: 'Fibd' }).invoice.data.paymentHash;
    changes = [];
    db.transaction(() => {
      svc.markPaid(paid);
      expect(changes).toEqual([]);
    })();
    expect(() =>
      db.transaction(() => {
        svc.markPaid(undone);
        throw new Error('the channel state could not be saved');
      })(),
    ).toThrow('could not be saved');
    await Promise.resolve();
    expect(changes).toEqual([
      { PutCkbInvoiceStatus: { payment_hash: bytesToHex(paid), invoice_status: 'Paid' } },
    ]);
    expect(svc.getInvoice(undone).status).toBe('Open');
  });
});

describe('settle_invoice (hold invoices)', () => {
  const preimage = new Uint8Array(32).fill(7);
  const holdHash = bytesToHex(ckbHash(preimage));

  it('releases the preimage of a Received invoice and completes it', () => {
    const svc = service();
    svc.newInvoice({ amount: 1n, currency: 'Fibd', paymentHash: holdHash });
    expect(domainError(() => svc.settleInvoice(holdHash, preimage))).toBe('Invoice is still open');
    svc.markReceived(holdHash, 1n);
    changes = [];
    svc.settleInvoice(holdHash, preimage);
    expect(svc.getPreimage(holdHash)).toEqual(preimage);
    expect(svc.getInvoice(holdHash).status).toBe('Paid');
    expect(changes).toEqual([
      { PutPreimage: { payment_hash: holdHash, payment_preimage: bytesToHex(preimage) } },
      { PutCkbInvoiceStatus: { payment_hash: holdHash, invoice_status: 'Paid' } },
    ]);
    expect(domainError(() => svc.settleInvoice(holdHash, preimage))).toBe('Invoice is already paid');
  });

  it('hands over to the payment layer when it is wired (status stays Received until markPaid)', () => {
    const settled: string[] = [];
    const svc = service({ onSettle: (h, p) => settled.push(bytesToHex(h) + bytesToHex(p)) });
    svc.newInvoice({ amount: 1n, currency: 'Fibd', paymentHash: holdHash });
    svc.markReceived(holdHash, 1n);
    svc.settleInvoice(holdHash, preimage);
    expect(settled).toEqual([holdHash + bytesToHex(preimage)]);
    expect(svc.getInvoice(holdHash).status).toBe('Received');
    svc.markPaid(holdHash);
    expect(svc.getInvoice(holdHash).status).toBe('Paid');
  });

  it('checks the hash with the invoice algorithm and the status, with the reference texts', () => {
    const svc = service();
    expect(domainError(() => svc.settleInvoice(holdHash, preimage))).toBe('Invoice not found');
    const shaHash = bytesToHex(sha256(preimage));
    svc.newInvoice({
      amount: 1n,
      currency: 'Fibd',
      paymentHash: shaHash,
      hashAlgorithm: 'sha256',
      expiry: 5n,
    });
    svc.newInvoice({ amount: 1n, currency: 'Fibd', paymentHash: holdHash });
    expect(domainError(() => svc.settleInvoice(holdHash, new Uint8Array(32)))).toBe('Hash mismatch');
    clock = T0 + 6000;
    expect(domainError(() => svc.settleInvoice(shaHash, preimage))).toBe('Invoice is already expired');
    svc.cancelInvoice(holdHash);
    expect(domainError(() => svc.settleInvoice(holdHash, preimage))).toBe('Invoice is already cancelled');
    expect(svc.getPreimage(holdHash)).toBeUndefined();
  });

  it('putPreimage accepts only a preimage of the hash', () => {
    const svc = service();
    expect(domainError(() => svc.putPreimage(holdHash, new Uint8Array(32)))).toBe('Wrong preimage');
    svc.putPreimage(holdHash, preimage);
    expect(svc.getPreimage(holdHash)).toEqual(preimage);
    svc.removePreimage(holdHash);
    expect(svc.getPreimage(holdHash)).toBeUndefined();
  });
});
