/**
 * Invoice errors carry the reference node's Display text (`fiber-types/src/invoice.rs`
 * `InvoiceError`), so that RPC callers see the same messages as from fnn. They are DomainErrors:
 * the RPC layer answers them with -32000 and the message as is.
 */
import { DomainError } from '../codec/index.ts';

export type InvoiceErrorKind =
  | 'Bech32'
  | 'Molecule'
  | 'ParseAmount'
  | 'UnknownCurrency'
  | 'MalformedHrp'
  | 'TooShortDataPart'
  | 'InvalidSignature'
  | 'Decompress'
  | 'InvalidUtf8'
  | 'InvalidPubkey'
  | 'TooLong'
  | 'DuplicatedAttribute'
  | 'PaymentSecretRequiredForMpp'
  | 'BothPaymentHashAndPreimage'
  | 'NeitherPaymentHashNorPreimage'
  | 'DescriptionTooLong'
  | 'DeprecatedAttribute';

export class InvoiceError extends DomainError {
  constructor(
    readonly kind: InvoiceErrorKind,
    message: string,
    data?: unknown,
  ) {
    super(message, data);
  }
}

/** Error texts of bech32 0.9 (`bech32::Error` Display), prefixed as the reference does. */
export const bech32Error = (detail: string) => new InvoiceError('Bech32', `Bech32 error: ${detail}`);
export const moleculeError = (detail: string) => new InvoiceError('Molecule', `Molecule error: ${detail}`);
