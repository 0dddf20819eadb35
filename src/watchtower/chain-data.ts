/**
 * Pure readers of what the watchtower finds on chain (`fiber-channel-protocol.md` §5.2, §5.6,
 * §5.7): the fields of a 57-byte commitment-lock args, which side a commitment belongs to, and
 * the preimages a settlement transaction reveals in its unlock entries.
 */
import { ccc } from '@ckb-ccc/core';
import { aggregateXOnly, XW } from '../channel/index.ts';
import { blake160, ckbHash, sha256 } from '../crypto/index.ts';

export interface CommitmentArgs {
  /** `blake160(xonly(KeyAgg[non-holder, holder]))`. */
  keyHash: Uint8Array;
  delay: bigint;
  version: bigint;
  settlementHash: Uint8Array;
  /** 0 in a commitment tx, 1 in a cell left by a settlement. */
  flag: number;
}

export function parseCommitmentArgs(args: Uint8Array): CommitmentArgs | null {
  if (args.length !== 57) return null;
  return {
    keyHash: args.slice(0, 20),
    delay: ccc.numLeFromBytes(args.subarray(20, 28)),
    version: ccc.numBeFromBytes(args.subarray(28, 36)),
    settlementHash: args.slice(36, 56),
    flag: args[56] as number,
  };
}

const eq = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((x, i) => x === b[i]);

/**
 * Whether a commitment with these args is held by the peer: its revocation key is the
 * aggregate of [us (non-holder), peer (holder)].
 */
export function isPeersCommitment(
  a: CommitmentArgs,
  localFundingPubkey: Uint8Array,
  remoteFundingPubkey: Uint8Array,
): boolean {
  return eq(a.keyHash, blake160(aggregateXOnly([localFundingPubkey, remoteFundingPubkey])));
}

export interface RevealedPreimage {
  paymentHash: Uint8Array;
  preimage: Uint8Array;
}

/**
 * The preimages in a commitment-lock settlement witness `XW ‖ uc ‖ script ‖ entries`, each
 * checked against the TLC it unlocks (hash algorithm from the TLC's type byte). Anything
 * malformed yields nothing: chain data is hostile too.
 */
export function preimagesInWitness(witness: Uint8Array): RevealedPreimage[] {
  if (witness.length < 17 || !eq(witness.subarray(0, 16), XW) || witness[16] === 0) return [];
  const w = witness.subarray(17);
  const c = w[0] ?? 0;
  const P = 1 + 85 * c;
  const S = P + 72;
  if (w.length < S) return [];
  const out: RevealedPreimage[] = [];
  for (let i = S; i < w.length; ) {
    const t = w[i] as number;
    const p = w[i + 1];
    if (p !== 0 && p !== 1) break;
    const end = i + 2 + 65 + (p === 1 ? 32 : 0);
    if (end > w.length) break;
    if (p === 1 && t < c) {
      const tlc = w.subarray(1 + 85 * t, 1 + 85 * (t + 1));
      const preimage = w.slice(i + 67, end);
      const hash = ((tlc[0] as number) >> 1) & 1 ? sha256(preimage) : ckbHash(preimage);
      if (eq(hash.subarray(0, 20), tlc.subarray(17, 37))) out.push({ paymentHash: hash, preimage });
    }
    i = end;
  }
  return out;
}
