/**
 * The channel domain's refusals: a command the channel cannot take (answered over RPC), or a
 * peer's message the machine refuses (the channel may then be aborted). Messages are fnn's texts;
 * callers branch on `code`.
 */
import { type DetailsOf, DomainError } from '../codec/index.ts';

/** `Hash256(0x…)`: fnn's display of an id in its error texts. */
export const hash256 = (id: string) => `Hash256(${id})`;

/** Every code, with when it is thrown. */
export const CHANNEL_ERROR_CODES = {
  ChannelClosed: 'the channel is closed or gone (fnn: "Messaging failed because channel is closed")',
  ChannelNotFound: 'no channel under the given id or temporary id',
  PeerNotConnected: 'the counterparty is not connected',
  PeerFeaturesUnknown: 'the counterparty has not sent its Init message yet',
  InvalidParameter: 'a command parameter the channel refuses (amounts, fee rates, delays, scripts)',
  InvalidState: 'the channel is in a state that does not take this command',
  LocalStateOutdated: "our state is older than the peer's (restored from a backup): we refuse to act on it",
  AwaitingReestablish: 'restored from a backup, the channel has not reestablished with the peer yet',
  WaitingTlcAck: 'a commitment round is in progress; the TLC command may be tried again',
  TlcNotFound: 'the TLC to remove is not there or is not removable',
  PreimageMismatch: "the preimage does not hash to the TLC's payment hash",
  TlcAmountTooLow: 'a TLC amount of zero (onion code AmountBelowMinimum)',
  TlcLimitExceeded:
    'balance, reserve or in-flight limits refuse the TLC (onion code TemporaryChannelFailure)',
  TlcExpiryTooSoon: 'the TLC expires before now (onion code ExpiryTooSoon)',
  PendingTlcs: 'a shutdown while our offered TLCs are pending',
  InsufficientFunds: 'not enough CKB or UDT to fund or to pay the fee',
  CommitmentTxNotFound: 'there is no commitment transaction to submit',
  AlreadySubmitted: 'the signed external funding transaction was submitted already',
  FundingFailed: 'the channel stopped before its external funding completed',
  NodeStopping: 'the node is shutting down',
  UnexpectedMessage: 'a peer message out of place for the channel state',
  InvalidMessage: 'a peer message whose content breaks the protocol or our limits',
  InvalidSignature: "a signature that does not verify (the peer's, or the funder's in a submitted tx)",
  NonceExhausted: 'no MuSig2 nonce left for a signature',
  NonceSpent: 'fnn mode: the nonce ledger refuses the signature (docs/nonces.md)',
  MissingState: 'the channel lacks data the step needs (an internal invariant)',
} as const;
export type ChannelErrorCode = keyof typeof CHANNEL_ERROR_CODES;

/** Typed facts of the codes that carry some. */
export interface ChannelErrorDetails {
  TlcNotFound: { tlcId: bigint };
  /** The id or temporary id the caller named. */
  ChannelNotFound: { channelId: string };
}

export class ChannelError<C extends ChannelErrorCode = ChannelErrorCode> extends DomainError<
  C,
  DetailsOf<ChannelErrorDetails, C>
> {}
