/**
 * The cross-chain hub's refusals, with fnn's texts (`Store error: …`, `Lnd RPC error: …`).
 */
import { DomainError } from '../codec/index.ts';

/** Every code, with when it is thrown. */
export const CCH_ERROR_CODES = {
  OrderNotFound: 'no order under the payment hash',
  OrderExists: 'an order under the payment hash exists already',
  FiberNodeFailed: 'the Fiber node refused or failed a call',
  LndFailed: 'LND refused or failed a call',
  StoreFailed: 'the order store refused a write',
} as const;
export type CchErrorCode = keyof typeof CCH_ERROR_CODES;

export class CchError<C extends CchErrorCode = CchErrorCode> extends DomainError<C, undefined> {}
