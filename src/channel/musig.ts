/**
 * The MuSig2 sessions of a channel, with one rule: a secret nonce signs one message, once.
 *
 * Every 2-of-2 signature here has a *first signer* and a *completer*. The completer's public
 * nonce is advertised in advance (random, persisted before it is sent, dropped once used). The
 * first signer uses BIP-327 DeterministicSign: its nonce is derived from its key, the completer's
 * nonce and the message, and travels with its partial signature — so it never needs storing and
 * can never sign two different messages. Keys are given in aggregation order; nonces follow it.
 */
import { schnorr } from '@noble/curves/secp256k1.js';
import * as musig from '@scure/btc-signer/musig2.js';

export interface NoncePair {
  /** 97 bytes (k1 ‖ k2 ‖ pubkey), secret: persisted, never sent, used once. */
  secret: Uint8Array;
  /** 66 bytes (R1 ‖ R2), advertised to the peer. */
  public: Uint8Array;
}

export class SignatureError extends Error {}

export function newNonce(myPubkey: Uint8Array, mySecret: Uint8Array): NoncePair {
  const n = musig.nonceGen(myPubkey, mySecret);
  return { secret: n.secret.slice(), public: n.public.slice() };
}

/** First signer: a partial signature and its public nonce, given the completer's public nonce. */
export function signFirst(
  mySecret: Uint8Array,
  completerNonce: Uint8Array,
  keys: Uint8Array[],
  msg: Uint8Array,
): { partial: Uint8Array; nonce: Uint8Array } {
  // fastSign: no self-check of the partial here; the completer verifies it and the aggregate
  // signature is checked once against the aggregate key.
  const r = musig.deterministicSign(mySecret, completerNonce, keys, msg, [], [], undefined, true);
  return { partial: r.partialSig.slice(), nonce: r.publicNonce.slice() };
}

/**
 * Completer: checks the first signer's partial signature, adds its own with the advertised
 * nonce and returns the 64-byte BIP340 signature. Throws SignatureError if the peer's part is bad.
 */
export function complete(args: {
  mySecret: Uint8Array;
  myPubkey: Uint8Array;
  myNonce: NoncePair;
  theirPubkey: Uint8Array;
  theirNonce: Uint8Array;
  theirPartial: Uint8Array;
  keys: Uint8Array[];
  msg: Uint8Array;
}): Uint8Array {
  const mine = indexOf(args.keys, args.myPubkey);
  const theirs = indexOf(args.keys, args.theirPubkey);
  const nonces: Uint8Array[] = [];
  nonces[mine] = args.myNonce.public;
  nonces[theirs] = args.theirNonce;
  let session: musig.Session;
  try {
    session = new musig.Session(musig.nonceAggregate(nonces), args.keys, args.msg);
    if (!session.partialSigVerify(args.theirPartial, nonces, theirs)) throw new Error('invalid');
  } catch {
    throw new SignatureError('the peer partial signature does not verify');
  }
  const partials: Uint8Array[] = [];
  partials[theirs] = args.theirPartial;
  partials[mine] = session.sign(args.myNonce.secret.slice(), args.mySecret, true);
  const sig = session.partialSigAgg(partials);
  if (!schnorr.verify(sig, args.msg, aggregateXOnly(args.keys)))
    throw new SignatureError('the aggregate signature does not verify');
  return sig;
}

function indexOf(keys: Uint8Array[], k: Uint8Array): number {
  const i = keys.findIndex((x) => Buffer.compare(x, k) === 0);
  if (i < 0) throw new SignatureError('key not in the aggregation list');
  return i;
}

const aggCache = new Map<string, Uint8Array>();

/** The x-only aggregate of `keys` in this order (memoised: ~5 ms of curve arithmetic each). */
export function aggregateXOnly(keys: Uint8Array[]): Uint8Array {
  const k = keys.map((x) => Buffer.from(x).toString('hex')).join('');
  let v = aggCache.get(k);
  if (!v) {
    v = musig.keyAggExport(musig.keyAggregate(keys));
    if (aggCache.size > 1024) aggCache.clear();
    aggCache.set(k, v);
  }
  return v.slice();
}

export function sorted2(a: Uint8Array, b: Uint8Array): Uint8Array[] {
  return Buffer.compare(a, b) <= 0 ? [a, b] : [b, a];
}

/**
 * A session where both nonces were advertised in advance (the cooperative close, whose message
 * carries no nonce): our partial signature with our nonce, used once.
 */
export function signWithNonce(a: {
  mySecret: Uint8Array;
  myPubkey: Uint8Array;
  myNonce: NoncePair;
  theirPubkey: Uint8Array;
  theirNonce: Uint8Array;
  keys: Uint8Array[];
  msg: Uint8Array;
}): Uint8Array {
  const nonces: Uint8Array[] = [];
  nonces[indexOf(a.keys, a.myPubkey)] = a.myNonce.public;
  nonces[indexOf(a.keys, a.theirPubkey)] = a.theirNonce;
  const session = new musig.Session(musig.nonceAggregate(nonces), a.keys, a.msg);
  return session.sign(a.myNonce.secret.slice(), a.mySecret);
}

/** Aggregates two partial signatures of such a session, checking the peer's. */
export function aggregateTwo(a: {
  myPubkey: Uint8Array;
  myNonce: Uint8Array;
  myPartial: Uint8Array;
  theirPubkey: Uint8Array;
  theirNonce: Uint8Array;
  theirPartial: Uint8Array;
  keys: Uint8Array[];
  msg: Uint8Array;
}): Uint8Array {
  const mine = indexOf(a.keys, a.myPubkey);
  const theirs = indexOf(a.keys, a.theirPubkey);
  const nonces: Uint8Array[] = [];
  nonces[mine] = a.myNonce;
  nonces[theirs] = a.theirNonce;
  try {
    const session = new musig.Session(musig.nonceAggregate(nonces), a.keys, a.msg);
    if (!session.partialSigVerify(a.theirPartial, nonces, theirs)) throw new Error('invalid');
    const partials: Uint8Array[] = [];
    partials[mine] = a.myPartial;
    partials[theirs] = a.theirPartial;
    return session.partialSigAgg(partials);
  } catch {
    throw new SignatureError('the peer partial signature does not verify');
  }
}
