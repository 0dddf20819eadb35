/**
 * Invoice errors carry the reference node's Display text (`fiber-types/src/invoice.rs`
 * `InvoiceError`), so that RPC callers see the same messages as from fnn. Callers branch on `code`.
 */
import { DomainError } from '../codec/index.ts';

/** Every code, with when it is thrown (the first group are fnn's `InvoiceError` variants). */
export const INVOICE_ERROR_CODES = {
  Bech32: 'the invoice string is not valid bech32',
  Molecule: 'the invoice data does not parse as molecule',
  ParseAmount: 'the amount in the human-readable part does not parse',
  UnknownCurrency: 'the currency prefix is not known',
  MalformedHrp: 'the human-readable part is malformed',
  TooShortDataPart: 'the data part is too short',
  InvalidSignature: 'the invoice signature does not verify',
  Decompress: 'the invoice data does not decompress',
  InvalidUtf8: 'a text attribute is not UTF-8',
  InvalidPubkey: 'the payee public key is not a valid key',
  TooLong: 'the invoice string is too long',
  DuplicatedAttribute: 'an attribute appears twice',
  PaymentSecretRequiredForMpp: 'an MPP invoice without a payment secret',
  BothPaymentHashAndPreimage: 'both a payment hash and a preimage were given',
  NeitherPaymentHashNorPreimage: 'neither a payment hash nor a preimage was given',
  DescriptionTooLong: 'the description is too long',
  DeprecatedAttribute: 'a deprecated attribute',
  InvalidParameter: 'a parameter of the wrong shape (e.g. a hash that is not 32 bytes)',
  InvoiceNotFound: 'no invoice under the payment hash',
  InvoiceExists: 'an invoice under the payment hash exists already',
  StatusTransition: 'the invoice status does not allow the change (e.g. cancelling a paid invoice)',
  CurrencyMismatch: "the currency is not the chain network's",
  MppNotSupported: 'an MPP invoice while the node has MPP off',
  TrampolineNotSupported: 'a trampoline invoice while the node has trampoline routing off',
  FinalExpiryDeltaOutOfRange: "final_expiry_delta outside the node's bounds",
  EncodeFailed: 'the invoice cannot be encoded',
  HashMismatch: "the preimage does not hash to the invoice's payment hash",
  WrongPreimage: 'a preimage other than the one stored for the hash',
} as const;
export type InvoiceErrorCode = keyof typeof INVOICE_ERROR_CODES;
/** The former name of the code type. */
export type InvoiceErrorKind = InvoiceErrorCode;

export class InvoiceError<C extends InvoiceErrorCode = InvoiceErrorCode> extends DomainError<C, undefined> {
  constructor(code: C, message: string, data?: unknown) {
    super(code, message, undefined, data);
  }

  /** The code under its former name (codec tests read it). */
  get kind(): C {
    return this.code;
  }
}

/** Error texts of bech32 0.9 (`bech32::Error` Display), prefixed as the reference does. */
export const bech32Error = (detail: string) => new InvoiceError('Bech32', `Bech32 error: ${detail}`);
export const moleculeError = (detail: string) => new InvoiceError('Molecule', `Molecule error: ${detail}`);
