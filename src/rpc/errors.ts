/** Refusals by the RPC modules themselves (limits, dev and ops methods), with fnn's texts where it has them. */
import { DomainError } from '../codec/index.ts';

/** Every code, with when it is thrown. */
export const RPC_METHOD_ERROR_CODES = {
  OutOfRange: "a parameter beyond the node's limits (fee rates, amounts, invoice expiry)",
  InvalidParameter: 'a parameter the method refuses after parsing',
  WebSocketRequired: 'a subscription over HTTP',
  ProfileRunning: 'a profile is already being recorded',
  BackupFailed: 'the backup could not be written',
  InvalidPrivateKey: 'a private key of the wrong length or outside the curve order',
  InvalidTransaction: 'a transaction that does not parse',
  NoMatchingInputs: 'no input of the transaction is locked by the given key',
} as const;
export type RpcMethodErrorCode = keyof typeof RPC_METHOD_ERROR_CODES;

export class RpcMethodError<C extends RpcMethodErrorCode = RpcMethodErrorCode> extends DomainError<
  C,
  undefined
> {}
