/**
 * The payment domain's refusals, with fnn's texts. Callers branch on `code`.
 */
import { DomainError } from '../codec/index.ts';

/** Every code, with when it is thrown. */
export const PAYMENT_ERROR_CODES = {
  InvalidRequest: 'send_payment parameters that do not validate ("Failed to validate payment request")',
  NoHopRequirements: 'build_router without hops',
  SessionExists: 'a payment session for the hash exists already',
  SessionNotFound: 'no payment session for the hash',
  NoPathFound: 'no route carries the payment (build_router, fnn\'s "Network Graph error")',
  SendFailed: 'no route can carry the payment: kept on record as Failed with the text',
} as const;
export type PaymentErrorCode = keyof typeof PAYMENT_ERROR_CODES;

export class PaymentError<C extends PaymentErrorCode = PaymentErrorCode> extends DomainError<C, undefined> {}

/**
 * A payment no route can carry: fnn's `Send payment error: …` texts. The payment is kept on record
 * as Failed with that reason (as the reference stores the session before building its routes),
 * so callers tell it apart by its code, never by its text.
 */
export class SendPaymentError extends PaymentError<'SendFailed'> {
  constructor(message: string) {
    super('SendFailed', message);
  }
}
