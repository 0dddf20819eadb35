/**
 * MuSig2 (BIP-327) as Fiber uses it: key aggregation over 33-byte compressed keys in the order
 * given (no sorting unless the caller sorts, no tweaks), x-only aggregate key, BIP340 signatures.
 * Backed by @scure/btc-signer's musig2. `signTogether` runs every party locally — for tests and the
 * dev chain tooling, not for channels (where each party holds only its own key and nonce).
 */
import * as musig from '@scure/btc-signer/musig2.js';

/** The x-only (32-byte) aggregate of the keys, in the given order. */
export function aggregateXOnly(pubkeys: Uint8Array[]): Uint8Array {
  return musig.keyAggExport(musig.keyAggregate(pubkeys));
}

/** Fiber's `sortKeys`: ascending byte order of the compressed keys. */
export function sortPubkeys(pubkeys: Uint8Array[]): Uint8Array[] {
  return [...pubkeys].sort((a, b) => Buffer.compare(a, b));
}

/**
 * A complete 2-of-n signature by parties whose secret keys are all known, aggregated in the
 * order of `pubkeys` (each secret key must match one of them). Fresh random nonces each call.
 */
export function signTogether(secretKeys: Uint8Array[], pubkeys: Uint8Array[], msg: Uint8Array): Uint8Array {
  const parties = secretKeys.map((sk) => {
    const pk = musig.IndividualPubkey(sk);
    const compressed = pubkeys.find((p) => Buffer.compare(p, pk) === 0);
    if (!compressed) throw new Error('secret key does not match any of the public keys');
    return { sk, pk: compressed, nonces: musig.nonceGen(compressed, sk, undefined, msg) };
  });
  const aggNonce = musig.nonceAggregate(parties.map((p) => p.nonces.public));
  const session = new musig.Session(aggNonce, pubkeys, msg);
  const partials = parties.map((p) => session.sign(p.nonces.secret, p.sk));
  return session.partialSigAgg(partials);
}
