/**
 * The MuSig2 sessions of a channel, with one rule: a secret nonce signs one message, once.
 *
 * Every 2-of-2 signature here has a *first signer* and a *completer*. The completer's public
 * nonce is advertised in advance (random, persisted before it is sent, dropped once used). The
 * first signer uses BIP-327 DeterministicSign: its nonce is derived from its key, the completer's
 * nonce and the message, and travels with its partial signature — so it never needs storing and
 * can never sign two different messages. Keys are given in aggregation order; nonces follow it.
 */
import { musig2Fast as fast, schnorrVerify } from '../crypto/index.ts';

export interface NoncePair {
  /** 97 bytes (k1 ‖ k2 ‖ pubkey), secret: persisted, never sent, used once. */
  secret: Uint8Array;
  /** 66 bytes (R1 ‖ R2), advertised to the peer. */
  public: Uint8Array;
}

export class SignatureError extends Error {}

/** A two-party session: both keys (`keys` in aggregation order), the peer's public nonce, the message. */
interface TwoParty {
  myPubkey: Uint8Array;
  theirPubkey: Uint8Array;
  theirNonce: Uint8Array;
  keys: Uint8Array[];
  msg: Uint8Array;
}

export function newNonce(myPubkey: Uint8Array, mySecret: Uint8Array): NoncePair {
  return fast.nonceGen(myPubkey, mySecret);
}

/** First signer: a partial signature and its public nonce, given the completer's public nonce. */
export function signFirst(
  mySecret: Uint8Array,
  completerNonce: Uint8Array,
  keys: Uint8Array[],
  msg: Uint8Array,
  /** Our funding key's public half (else derived again, one multiplication). */
  myPubkey?: Uint8Array,
): { partial: Uint8Array; nonce: Uint8Array } {
  // No self-check of the partial here: the completer verifies it, and the aggregate signature
  // is checked once against the aggregate key.
  return fast.deterministicSign(mySecret, completerNonce, keys, msg, myPubkey);
}

/**
 * Completer: checks the first signer's partial signature, adds its own with the advertised
 * nonce and returns the 64-byte BIP340 signature. Throws SignatureError if the peer's part is bad.
 */
export function complete(
  args: TwoParty & { mySecret: Uint8Array; myNonce: NoncePair; theirPartial: Uint8Array },
): Uint8Array {
  const { s, mine, theirs } = session(args, args.myNonce.public, args.theirNonce);
  const partials: Uint8Array[] = [];
  partials[theirs] = args.theirPartial;
  partials[mine] = signWithSecretNonce(s, args.myNonce, args.mySecret, args.myPubkey);
  // Our partial never leaves this function, so instead of BIP-327's partial verification of the
  // peer's part (two more variable-base multiplications) the aggregate is checked as the chain
  // will check it: with two signers and ours computed here, a failure can only be the peer's.
  // This is also the check that matters, as the signature may be broadcast much later.
  return verifiedAggregate(s, partials);
}

function session(
  a: { myPubkey: Uint8Array; theirPubkey: Uint8Array; keys: Uint8Array[]; msg: Uint8Array },
  myNonce: Uint8Array,
  theirNonce: Uint8Array,
): { s: fast.SessionValues; mine: number; theirs: number } {
  const mine = indexOf(a.keys, a.myPubkey);
  const theirs = indexOf(a.keys, a.theirPubkey);
  const nonces: Uint8Array[] = [];
  nonces[mine] = myNonce;
  nonces[theirs] = theirNonce;
  try {
    return { s: fast.sessionValues(fast.keyAggContext(a.keys), nonces, a.msg), mine, theirs };
  } catch {
    throw new SignatureError('a public nonce or key is not a valid point');
  }
}

function signWithSecretNonce(
  s: fast.SessionValues,
  nonce: NoncePair,
  secret: Uint8Array,
  pubkey: Uint8Array,
): Uint8Array {
  const { k1, k2 } = fast.decodeSecretNonce(nonce.secret);
  return fast.partialSign(s, k1, k2, secret, pubkey);
}

function verifiedAggregate(s: fast.SessionValues, partials: Uint8Array[]): Uint8Array {
  let sig: Uint8Array | undefined;
  try {
    sig = fast.aggregatePartials(s, partials);
  } catch {}
  if (!sig || !schnorrVerify(sig, s.msg, s.ctx.xonly))
    throw new SignatureError('the peer partial signature does not verify');
  return sig;
}

function indexOf(keys: Uint8Array[], k: Uint8Array): number {
  const i = keys.findIndex((x) => Buffer.compare(x, k) === 0);
  if (i < 0) throw new SignatureError('key not in the aggregation list');
  return i;
}

/** The x-only aggregate of `keys` in this order (memoised: ~5 ms of curve arithmetic each). */
export function aggregateXOnly(keys: Uint8Array[]): Uint8Array {
  return fast.keyAggContext(keys).xonly.slice();
}

export function sorted2(a: Uint8Array, b: Uint8Array): Uint8Array[] {
  return Buffer.compare(a, b) <= 0 ? [a, b] : [b, a];
}

/**
 * A session where both nonces were advertised in advance (the cooperative close, whose message
 * carries no nonce): our partial signature with our nonce, used once.
 */
export function signWithNonce(a: TwoParty & { mySecret: Uint8Array; myNonce: NoncePair }): Uint8Array {
  const { s } = session(a, a.myNonce.public, a.theirNonce);
  return signWithSecretNonce(s, a.myNonce, a.mySecret, a.myPubkey);
}

/** Aggregates two partial signatures of such a session, checking the peer's. */
export function aggregateTwo(
  a: TwoParty & { myNonce: Uint8Array; myPartial: Uint8Array; theirPartial: Uint8Array },
): Uint8Array {
  const { s, mine, theirs } = session(a, a.myNonce, a.theirNonce);
  const partials: Uint8Array[] = [];
  partials[mine] = a.myPartial;
  partials[theirs] = a.theirPartial;
  return verifiedAggregate(s, partials);
}

/** BIP-327 PartialSigVerify of the peer's partial signature (no secret of ours involved). */
export function verifyPartial(a: TwoParty & { myNonce: Uint8Array; theirPartial: Uint8Array }): void {
  const { s } = session(a, a.myNonce, a.theirNonce);
  if (!fast.partialVerify(s, a.theirPartial, a.theirNonce, a.theirPubkey))
    throw new SignatureError('the peer partial signature does not verify');
}
