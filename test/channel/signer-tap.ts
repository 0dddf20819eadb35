/**
 * A tap on the MuSig2 signer for the hostile-peer tests: every partial signature the code under
 * test computes is recorded with the public inputs of its session (the key list, each signer's
 * public nonce, the message). Installed with `vi.mock` on `src/crypto/musig2-fast.ts` (see
 * `hostile-peer.test.ts`); it imports nothing from `src/`, so the mock factory has no cycle.
 *
 * Why at the signer and not on the wire: a partial signature that stays in the node still
 * reaches the peer once the aggregate it went into is published (the peer subtracts its own
 * part), so the conservative model is that every partial the node keeps is known to the peer.
 * Only the session's public data is recorded besides the partial: the secret nonce and key are
 * never read, and the test recomputes the coefficients itself (`hostile-peer.ts`).
 */
import { secp256k1 } from '@noble/curves/secp256k1.js';

export interface Tapped {
  /** The signer's compressed funding key. */
  signer: Uint8Array;
  /** The aggregation key list, in order. */
  keys: Uint8Array[];
  /** The signer's public nonce (R1 ‖ R2, 66 bytes). */
  nonce: Uint8Array;
  /** Every other signer's public nonce. */
  others: Uint8Array[];
  msg: Uint8Array;
  partial: Uint8Array;
  /**
   * Set when the step that computed it failed (the machine threw): nothing of that step is
   * persisted or sent, so the partial never leaves the node (e.g. a completion whose aggregate
   * did not verify).
   */
  discarded?: boolean;
}

export const tapped: Tapped[] = [];

const copy = (x: Uint8Array) => Uint8Array.from(x);
const same = (a: Uint8Array, b: Uint8Array) => Buffer.compare(a, b) === 0;

/** The module's type only: a type import adds no runtime import (no cycle in the mock factory). */
type Fast = typeof import('../../src/crypto/musig2-fast.ts');

/** The module's functions, with `sessionValues`, `partialSign` and `deterministicSign` tapped. */
export function tapMusig(real: Fast): Fast {
  const sessions = new WeakMap<object, { nonces: Uint8Array[]; keys: Uint8Array[]; msg: Uint8Array }>();
  return {
    ...real,
    sessionValues(ctx: Parameters<Fast['sessionValues']>[0], nonces: Uint8Array[], msg: Uint8Array) {
      const s = real.sessionValues(ctx, nonces, msg);
      sessions.set(s, { nonces: nonces.map(copy), keys: ctx.keys.map(copy), msg: copy(msg) });
      return s;
    },
    partialSign(
      s: Parameters<Fast['partialSign']>[0],
      k1: bigint,
      k2: bigint,
      secret: Uint8Array,
      knownPubkey?: Uint8Array,
    ) {
      const partial = real.partialSign(s, k1, k2, secret, knownPubkey);
      const info = sessions.get(s);
      if (!info) throw new Error('signer tap: a session the tap did not see');
      const signer = knownPubkey ? copy(knownPubkey) : secp256k1.getPublicKey(secret, true);
      const i = info.keys.findIndex((k) => same(k, signer));
      tapped.push({
        signer,
        keys: info.keys,
        nonce: info.nonces[i] as Uint8Array,
        others: info.nonces.filter((_, j) => j !== i),
        msg: info.msg,
        partial: copy(partial),
      });
      return partial;
    },
    deterministicSign(secret: Uint8Array, otherNonce: Uint8Array, keys: Uint8Array[], msg: Uint8Array) {
      const r = real.deterministicSign(secret, otherNonce, keys, msg);
      tapped.push({
        signer: secp256k1.getPublicKey(secret, true),
        keys: keys.map(copy),
        nonce: copy(r.nonce),
        others: [copy(otherNonce)],
        msg: copy(msg),
        partial: copy(r.partial),
      });
      return r;
    },
  };
}

/**
 * Every nonce that signed more than `limit` distinct messages (with the same co-signers' nonces
 * or others), among the partials the tap kept: one under Strand's rules, two under fnn's (its
 * schedule and Strand's two-use ledger, docs/nonces.md).
 */
export function overusedNonces(limit = 1): string[] {
  const hex = (x: Uint8Array) => Buffer.from(x).toString('hex');
  const seen = new Map<string, Set<string>>();
  for (const x of tapped) {
    if (x.discarded) continue;
    const key = hex(x.nonce);
    const s = seen.get(key) ?? new Set<string>();
    s.add(`${hex(x.msg)}:${x.others.map(hex).join(',')}`);
    seen.set(key, s);
  }
  return [...seen].filter(([, s]) => s.size > limit).map(([k]) => k);
}
