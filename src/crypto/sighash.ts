/**
 * Signing a CKB transaction with secp256k1-blake160 sighash-all: for each group of inputs locked by
 * the key, the first witness becomes a WitnessArgs whose lock is a 65-byte signature over
 * `H(tx_hash ‖ u64le(len)‖witness₀ with 65 zero bytes as lock ‖ other witnesses of the group ‖
 * witnesses beyond the inputs)`.
 */
import { ccc } from '@ckb-ccc/core';
import { blake2b } from '@noble/hashes/blake2.js';
import { signRecoverable } from './secp256k1.ts';

const CKB_PERSONAL = new TextEncoder().encode('ckb-default-hash');

function u64le(n: number): Uint8Array {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigUint64(0, BigInt(n), true);
  return b;
}

/** The 32-byte message for the group whose inputs are `indices` (first one carries the signature). */
export function sighashAllMessage(tx: ccc.Transaction, indices: number[]): Uint8Array {
  const h = blake2b.create({ dkLen: 32, personalization: CKB_PERSONAL });
  h.update(ccc.bytesFrom(tx.hash()));
  const add = (w: Uint8Array) => {
    h.update(u64le(w.length));
    h.update(w);
  };
  const first = indices[0];
  if (first === undefined) throw new Error('sighashAllMessage: empty group');
  const w0 = ccc.WitnessArgs.fromBytes(tx.witnesses[first] ?? '0x');
  add(withLock(w0, new Uint8Array(65)));
  for (const i of indices.slice(1)) add(ccc.bytesFrom(tx.witnesses[i] ?? '0x'));
  for (let i = tx.inputs.length; i < tx.witnesses.length; i++) add(ccc.bytesFrom(tx.witnesses[i] as ccc.Hex));
  return h.digest();
}

/**
 * Signs, in place, the inputs at `indices` (one lock group) with `secretKey`. Witnesses are
 * extended to cover the inputs; an existing WitnessArgs at the first index keeps its type fields.
 */
export function signSighashAll(tx: ccc.Transaction, indices: number[], secretKey: Uint8Array): void {
  const first = indices[0];
  if (first === undefined) return;
  while (tx.witnesses.length < tx.inputs.length) tx.witnesses.push('0x');
  const existing = tx.witnesses[first] ?? '0x';
  const w0 = existing === '0x' ? ccc.WitnessArgs.from({}) : ccc.WitnessArgs.fromBytes(existing);
  tx.witnesses[first] = ccc.hexFrom(withLock(w0, new Uint8Array(65)));
  const sig = signRecoverable(sighashAllMessage(tx, indices), secretKey);
  tx.witnesses[first] = ccc.hexFrom(withLock(w0, sig));
}

/** A fresh WitnessArgs with `lock` set (ccc entities cache their encoding, so never mutate one). */
function withLock(w: ccc.WitnessArgs, lock: Uint8Array): Uint8Array {
  return ccc.WitnessArgs.from({
    lock: ccc.hexFrom(lock),
    inputType: w.inputType,
    outputType: w.outputType,
  }).toBytes();
}
