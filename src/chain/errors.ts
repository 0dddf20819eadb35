/** The chain layer's refusals (wallet and transaction tracking). */
import { DomainError } from '../codec/index.ts';

/** Every code, with when it is thrown. */
export const CHAIN_ERROR_CODES = {
  NotConfirmed: 'a transaction not confirmed in the time given',
  NoDepGroup: 'the chain has no dep-group transaction in its genesis block',
  AmountBelowCellMinimum: 'a transfer below the 61 CKB a cell needs',
  InsufficientFunds: 'the wallet holds too little to fund the transaction',
  TxRejected: 'the chain rejected a transaction the node sent',
  ChainUnreachable: 'the CKB node does not answer',
  ChainProtocol: 'the CKB node answered with something that is not a valid result',
  ScriptsUnavailable: 'the chain lacks a script or cell dep the node needs',
} as const;
export type ChainErrorCode = keyof typeof CHAIN_ERROR_CODES;

export class ChainError<C extends ChainErrorCode = ChainErrorCode> extends DomainError<C, undefined> {}

/** A ChainError class whose every instance has one code: `new X(message, data?)`. */
export function chainErrorOf<C extends ChainErrorCode>(code: C) {
  return class extends ChainError<C> {
    constructor(message: string, data?: unknown) {
      super(code, message, undefined, data);
    }
  };
}
