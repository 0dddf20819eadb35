/** The receiver's decision over held MPP parts (`decideTlcSet`, the reference's SettleTlcSetCommand). */
import { describe, expect, it } from 'vitest';
import { decideTlcSet, type HeldPart } from '../../src/payment/tlc-set.ts';

const part = (tlcId: number, amount: bigint, totalAmount: bigint | null = 100n): HeldPart => ({
  channelId: `ch${tlcId}`,
  tlcId: BigInt(tlcId),
  amount,
  totalAmount,
});
const base = { invoiceAmount: 100n, allowMpp: true, status: 'Open' as const };

describe('decideTlcSet', () => {
  it('keeps holding parts until they reach the total, then settles them all', () => {
    expect(decideTlcSet({ ...base, parts: [part(1, 60n)] })).toEqual({
      fail: [],
      settle: [],
      complete: false,
    });
    const parts = [part(1, 60n), part(2, 40n)];
    expect(decideTlcSet({ ...base, parts })).toEqual({ fail: [], settle: parts, complete: true });
  });

  it('refuses parts beyond the total with HoldTlcTimeout', () => {
    const d = decideTlcSet({ ...base, parts: [part(1, 60n), part(2, 40n), part(3, 10n)] });
    expect(d.settle.map((p) => p.tlcId)).toEqual([1n, 2n]);
    expect(d.fail).toEqual([{ part: part(3, 10n), code: 'HoldTlcTimeout' }]);
  });

  it('refuses every part when totals disagree or fall short of the invoice', () => {
    const mixed = decideTlcSet({ ...base, parts: [part(1, 60n), part(2, 40n, 120n)] });
    expect(mixed.fail.map((f) => f.code)).toEqual([
      'IncorrectOrUnknownPaymentDetails',
      'IncorrectOrUnknownPaymentDetails',
    ]);
    const short = decideTlcSet({ ...base, parts: [part(1, 60n, 90n)] });
    expect(short.fail.map((f) => f.code)).toEqual(['IncorrectOrUnknownPaymentDetails']);
  });

  it("answers with the invoice's state once it is no longer open", () => {
    const parts = [part(1, 60n)];
    expect(decideTlcSet({ ...base, status: 'Expired', parts }).fail[0]!.code).toBe('InvoiceExpired');
    expect(decideTlcSet({ ...base, status: 'Cancelled', parts }).fail[0]!.code).toBe('InvoiceCancelled');
    expect(decideTlcSet({ ...base, status: 'Paid', parts }).fail[0]!.code).toBe('HoldTlcTimeout');
  });

  it('takes a part without a record as paying its own amount', () => {
    expect(decideTlcSet({ ...base, parts: [part(1, 100n, null)] }).complete).toBe(true);
  });
});
