/**
 * Typed errors of the P2P layer. Every hostile byte sequence ends in one of these (never an
 * uncaught exception); the session that received it is dropped and the reason logged.
 */
import { DomainError, MoleculeError, StrandError } from '../codec/index.ts';

export type P2pErrorKind =
  /** Bytes that do not parse (molecule, yamux header, frame length). */
  | 'Malformed'
  /** A frame above a configured limit. */
  | 'FrameTooLarge'
  /** secio: no common exchange, cipher or hash. */
  | 'NoSupportIntersection'
  /** secio: the remote's static key is ours. */
  | 'ConnectSelf'
  /** secio: the Exchange signature does not verify. */
  | 'SignatureVerificationFailed'
  /** secio: bad ephemeral key or all-zero shared secret. */
  | 'SecretGenerationFailed'
  /** secio: both ordering digests are equal. */
  | 'InvalidProposition'
  /** secio: the peer did not echo our nonce. */
  | 'NonceVerificationFailed'
  /** AEAD tag mismatch or a frame shorter than the tag. */
  | 'CryptoError'
  /** yamux protocol violation. */
  | 'YamuxProtocol'
  /** The dialled `/p2p/<id>` does not match the key proven in the handshake. */
  | 'PeerIdNotMatch'
  /** A step did not finish in time. */
  | 'Timeout'
  /** The connection closed. */
  | 'Closed';

export class P2pError extends StrandError {
  constructor(
    readonly kind: P2pErrorKind,
    message: string,
  ) {
    super(message);
  }
}

export function malformed(what: string): P2pError {
  return new P2pError('Malformed', what);
}

/** Runs a molecule decoder: its `MoleculeError` becomes this layer's Malformed, with the same text. */
export function decodeOrMalformed<T>(decode: () => T): T {
  try {
    return decode();
  } catch (e) {
    if (e instanceof MoleculeError) throw malformed(e.message);
    throw e;
  }
}

/** Every code of a refused peer command (connect, disconnect, send), with when it is thrown. */
export const PEER_ERROR_CODES = {
  InvalidAddress: 'an address that is empty or not a dialable multiaddr',
  ConnectSelf: 'the address or pubkey is this node',
  AlreadyConnected: 'a session with the peer is open already',
  PeerNotFound: 'no address known for the pubkey',
  PeerNotConnected: 'no open session with the peer',
  ProtocolNotOpen: 'the peer session has not opened the protocol',
  OutboundLimit: 'the outbound peer limit is reached',
  NodeStopping: 'the node is stopping',
  DialFailed: 'the connection could not be made',
  HandshakeFailed: 'the secio handshake failed',
  PeerIdMismatch: 'the key proven in the handshake is not the dialled peer id',
  SessionClosed: 'the session closed before the step completed',
  AddressOrPubkeyRequired: 'connect_peer without `address` or `pubkey`',
} as const;
export type PeerErrorCode = keyof typeof PEER_ERROR_CODES;

/** A peer command refused (fnn's texts). Unlike P2pError, nothing hostile: the caller is told why. */
export class PeerError<C extends PeerErrorCode = PeerErrorCode> extends DomainError<C, undefined> {}
