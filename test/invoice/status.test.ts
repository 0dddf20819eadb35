import { describe, expect, it } from 'vitest';
import {
  effectiveStatus,
  INVOICE_STATUSES,
  type InvoiceStatus,
  nextStatus,
} from '../../src/invoice/status.ts';

const ok = (status: InvoiceStatus) => ({ ok: true, status });
const no = (error: string) => ({ ok: false, error });

describe('invoice status machine', () => {
  it('reads a stored Open past its expiry as Expired, and nothing else', () => {
    for (const s of INVOICE_STATUSES) {
      expect(effectiveStatus(s, false)).toBe(s);
      expect(effectiveStatus(s, true)).toBe(s === 'Open' ? 'Expired' : s);
    }
  });

  it('cancel: anything but Paid and Cancelled becomes Cancelled', () => {
    expect(nextStatus('Open', 'cancel', false)).toEqual(ok('Cancelled'));
    expect(nextStatus('Open', 'cancel', true)).toEqual(ok('Cancelled'));
    expect(nextStatus('Received', 'cancel', false)).toEqual(ok('Cancelled'));
    expect(nextStatus('Expired', 'cancel', false)).toEqual(ok('Cancelled'));
    expect(nextStatus('Paid', 'cancel', false)).toEqual(
      no('invoice can not be canceled, current status: Paid'),
    );
    expect(nextStatus('Cancelled', 'cancel', true)).toEqual(
      no('invoice can not be canceled, current status: Cancelled'),
    );
  });

  it('settle: only a Received invoice may release its preimage', () => {
    expect(nextStatus('Received', 'settle', false)).toEqual(ok('Received'));
    // the reference looks at the stored status: a Received invoice past expiry still settles
    expect(nextStatus('Received', 'settle', true)).toEqual(ok('Received'));
    expect(nextStatus('Open', 'settle', false)).toEqual(no('Invoice is still open'));
    expect(nextStatus('Open', 'settle', true)).toEqual(no('Invoice is already expired'));
    expect(nextStatus('Expired', 'settle', false)).toEqual(no('Invoice is already expired'));
    expect(nextStatus('Cancelled', 'settle', false)).toEqual(no('Invoice is already cancelled'));
    expect(nextStatus('Paid', 'settle', false)).toEqual(no('Invoice is already paid'));
  });

  it('receive: Open (not expired) → Received, idempotent, refused otherwise', () => {
    expect(nextStatus('Open', 'receive', false)).toEqual(ok('Received'));
    expect(nextStatus('Received', 'receive', true)).toEqual(ok('Received'));
    expect(nextStatus('Open', 'receive', true)).toEqual(no('Invoice is already expired'));
    expect(nextStatus('Cancelled', 'receive', false)).toEqual(no('Invoice is already cancelled'));
    expect(nextStatus('Paid', 'receive', false)).toEqual(no('Invoice is already paid'));
  });

  it('pay: a fulfilled payment is final from every status', () => {
    for (const s of INVOICE_STATUSES) {
      expect(nextStatus(s, 'pay', false)).toEqual(ok('Paid'));
      expect(nextStatus(s, 'pay', true)).toEqual(ok('Paid'));
    }
  });
});
