/** A payment hop's data for onion tests: 1,000 shannons, a fixed expiry, the rest empty. */
import type { PaymentHopData } from '../../src/payment/onion/hop-data.ts';

export const FIXTURE_EXPIRY = 1737538064358n;

export function hop(p: Partial<PaymentHopData>): PaymentHopData {
  return {
    amount: 1000n,
    expiry: FIXTURE_EXPIRY,
    paymentPreimage: null,
    hashAlgorithm: 0,
    fundingTxHash: new Uint8Array(32),
    nextHop: null,
    customRecords: null,
    ...p,
  };
}
