/** The watchtower's refusals of what a client sends it. */
import { DomainError } from '../codec/index.ts';

/** Every code, with when it is thrown. */
export const WATCHTOWER_ERROR_CODES = {
  InvalidSecretKey: 'a secret that is not a secp256k1 scalar',
  InvalidRemoteKey: 'a remote key that is not a public key',
  InvalidSignature: 'an aggregated signature that does not parse',
  InvalidNodeId: 'a node id that does not parse',
  InvalidSettlement: 'settlement data that does not check',
  WrongPreimage: 'a preimage that does not hash to the payment hash',
} as const;
export type WatchtowerErrorCode = keyof typeof WATCHTOWER_ERROR_CODES;

export class WatchtowerError<C extends WatchtowerErrorCode = WatchtowerErrorCode> extends DomainError<
  C,
  undefined
> {}
