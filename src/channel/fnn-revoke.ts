/**
 * fnn mode: revocations on fnn's schedule (docs/nonces.md). The holder of the commitment revoked
 * signs with its revocation nonce, the other side completes with its own; both nonces were
 * advertised before (Open/Accept, then each RevokeAndAck), and each of ours serves one revocation
 * each way: at most two partial signatures, counted in the ledger (`fnn-nonces.ts`).
 */
import { bytesToHex, hexToBytes } from '../codec/index.ts';
import { fnnOf, freshUse, isFnn, promote, theirRevokeNonce, useRevokeNonce } from './fnn-nonces.ts';
import { keysOf } from './keys.ts';
import { type NoncePair, signWithNonce } from './musig.ts';
import type { Channel, PartyParams } from './state.ts';
import type { MachineEnv } from './step.ts';

export { isFnn };

/**
 * Our RevokeAndAck's signature (our commitment R − 1): our head revocation nonce with the peer's
 * nonce number R; a fresh nonce of ours is advertised in the message.
 */
export function signOwnRevocation(
  ch: Channel,
  keys: Uint8Array[],
  msg: Uint8Array,
  env: MachineEnv,
): { ch: Channel; partial: Uint8Array; nonce: Uint8Array } {
  const theirNonce = theirRevokeNonce(ch, ch.commitmentNumbers.remote);
  const k = keysOf(ch);
  const used = useRevokeNonce(ch, (n) =>
    signWithNonce({
      mySecret: k.fundingKey,
      myPubkey: k.fundingPubkey,
      myNonce: n,
      theirPubkey: hexToBytes((ch.remote as PartyParams).fundingPubkey),
      theirNonce,
      keys,
      msg,
    }),
  );
  const next = freshUse(used.ch, env);
  const f = fnnOf(used.ch);
  return {
    ch: { ...used.ch, fnn: { ...f, myRevoke: [...f.myRevoke, next] } },
    partial: used.value,
    nonce: hexToBytes(next.public),
  };
}

/**
 * The peer's RevokeAndAck (its commitment L − 1): completed with our head revocation nonce and
 * its nonce number L; the nonce it advertises is its number L + 1. The peer committed our latest
 * commitment nonce before sending it.
 */
export function completePeerRevocation(
  ch: Channel,
  advertised: Uint8Array,
  session: (mine: NoncePair, theirs: Uint8Array) => Uint8Array,
): { ch: Channel; value: Uint8Array } {
  const L = ch.commitmentNumbers.local;
  const theirNonce = theirRevokeNonce(ch, L);
  const used = useRevokeNonce(ch, (n) => session(n, theirNonce));
  const f = fnnOf(used.ch);
  const R = ch.commitmentNumbers.remote;
  const low = L + 1n < R ? L + 1n : R;
  const theirRevoke = [...f.theirRevoke, { n: L + 1n, nonce: bytesToHex(advertised) }].filter(
    (x) => x.n >= low,
  );
  return { ch: promote({ ...used.ch, fnn: { ...f, theirRevoke } }), value: used.value };
}
