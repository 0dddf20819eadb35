/**
 * Memoised hash and serialisation of transactions. ccc recomputes both on every call, and for the
 * genesis cellbase (over 1 MB of system cells) one call takes about half a second. Only for
 * transactions that are final (verified or committed): never mutate one after asking.
 */
import type { ccc } from '@ckb-ccc/core';

const hashes = new WeakMap<ccc.Transaction, ccc.Hex>();
const bytes = new WeakMap<ccc.Transaction, Uint8Array>();

export function txHashOf(tx: ccc.Transaction): ccc.Hex {
  let h = hashes.get(tx);
  if (!h) {
    h = tx.hash();
    hashes.set(tx, h);
  }
  return h;
}

export function txBytesOf(tx: ccc.Transaction): Uint8Array {
  let b = bytes.get(tx);
  if (!b) {
    b = tx.toBytes();
    bytes.set(tx, b);
  }
  return b;
}

/** Seeds the memo with values computed elsewhere (e.g. verified from a cache file). */
export function primeTxCache(tx: ccc.Transaction, hash: ccc.Hex, serialized: Uint8Array): void {
  hashes.set(tx, hash);
  bytes.set(tx, serialized);
}
