/**
 * A payment no route can carry: fnn's `Send payment error: …` texts. The payment is kept on record
 * as Failed with that reason (as the reference stores the session before building its routes),
 * so callers tell it apart by its class, never by its text.
 */
import { DomainError } from '../codec/index.ts';

export class SendPaymentError extends DomainError {}
