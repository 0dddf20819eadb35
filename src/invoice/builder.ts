/**
 * Building a new invoice, as the reference's `InvoiceBuilder::build`: the payment hash comes
 * from the hash (hold invoice) or from hashing the preimage with the invoice's algorithm, never
 * both; attributes are checked (MPP needs a payment secret, no duplicate kinds, description at
 * most 639 bytes, the deprecated FinalHtlcTimeout refused).
 */
import { hashPreimage } from './codec.ts';
import { InvoiceError } from './errors.ts';
import { allowsMpp, type Currency, type HashAlgorithm, type Invoice, type InvoiceAttr } from './types.ts';

export const MAX_DESCRIPTION_LENGTH = 639;

export interface BuildInvoiceParams {
  currency: Currency;
  amount?: bigint;
  paymentHash?: Uint8Array;
  paymentPreimage?: Uint8Array;
  attrs: InvoiceAttr[];
  /** Milliseconds since the epoch. */
  timestamp: bigint;
}

export function buildInvoice(p: BuildInvoiceParams): Invoice {
  let paymentHash: Uint8Array;
  if (p.paymentHash && p.paymentPreimage) {
    throw new InvoiceError('BothPaymentHashAndPreimage', 'Both payment_hash and payment_preimage are set');
  } else if (p.paymentHash) {
    paymentHash = p.paymentHash;
  } else if (p.paymentPreimage) {
    const algo: HashAlgorithm =
      (p.attrs.find((a) => a.kind === 'HashAlgorithm') as { value: HashAlgorithm } | undefined)?.value ??
      'ckb_hash';
    paymentHash = hashPreimage(p.paymentPreimage, algo);
  } else {
    throw new InvoiceError(
      'NeitherPaymentHashNorPreimage',
      'Neither payment_hash nor payment_preimage is set',
    );
  }
  const inv: Invoice = {
    currency: p.currency,
    data: { timestamp: p.timestamp, paymentHash, attrs: p.attrs },
  };
  if (p.amount !== undefined) inv.amount = p.amount;
  checkAttrs(inv);
  return inv;
}

function checkAttrs(inv: Invoice): void {
  const attrs = inv.data.attrs;
  if (allowsMpp(inv) && !attrs.some((a) => a.kind === 'PaymentSecret')) {
    throw new InvoiceError('PaymentSecretRequiredForMpp', 'Payment secret is required for MPP payments');
  }
  const seen = new Set<string>();
  for (const a of attrs) {
    if (seen.has(a.kind))
      throw new InvoiceError('DuplicatedAttribute', `Duplicated attribute key: ${a.kind}`);
    seen.add(a.kind);
  }
  for (const a of attrs) {
    if (a.kind === 'Description') {
      const len = new TextEncoder().encode(a.value).length;
      if (len > MAX_DESCRIPTION_LENGTH) {
        throw new InvoiceError(
          'DescriptionTooLong',
          `Description with length of ${len} is too long, max length is ${MAX_DESCRIPTION_LENGTH}`,
        );
      }
    }
  }
  if (attrs.some((a) => a.kind === 'FinalHtlcTimeout')) {
    throw new InvoiceError('DeprecatedAttribute', 'Deprecated attribute: FinalHtlcTimeout');
  }
}
