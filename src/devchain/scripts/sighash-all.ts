/**
 * secp256k1-blake160 sighash-all, the default CKB wallet lock. The first witness of the group is a
 * WitnessArgs whose `lock` holds a 65-byte recoverable signature over
 * `H(tx_hash ‖ len‖witness₀ with lock zeroed ‖ len‖other group witnesses ‖ len‖witnesses beyond the inputs)`;
 * the signer's `blake160(compressed pubkey)` must equal the 20-byte args.
 * Exit codes as the C script: -1 args, -2 encoding, -3 syscall (missing witness), -11 recovery,
 * -31 pubkey hash mismatch.
 */
import { blake2b } from '@noble/hashes/blake2.js';
import { equalBytes } from '../../codec/index.ts';
import { blake160, recoverCompressed } from '../../crypto/index.ts';
import { parseWitnessArgs, type ScriptVerifier, u64le } from './context.ts';

const CKB_PERSONAL = new TextEncoder().encode('ckb-default-hash');

export const sighashAll: ScriptVerifier = {
  name: 'secp256k1_blake160_sighash_all',
  verify(tx, group) {
    const args = group.script.args;
    if (args.length !== 2 + 40) return -1;
    const first = group.inputIndices[0] as number;
    const w0 = tx.witnesses[first];
    if (!w0) return -3;
    const layout = parseWitnessArgs(w0);
    if (!layout?.lock) return -2;
    const [ls, le] = layout.lock;
    if (le - ls !== 65) return -1;
    const sig = Uint8Array.prototype.slice.call(w0, ls, le);
    const zeroed = Uint8Array.prototype.slice.call(w0);
    zeroed.fill(0, ls, le);
    const h = blake2b.create({ dkLen: 32, personalization: CKB_PERSONAL });
    h.update(tx.txHash);
    const add = (w: Uint8Array) => {
      h.update(u64le(BigInt(w.length)));
      h.update(w);
    };
    add(zeroed);
    // Like the C script: a later group input without a witness ends the loop (not an error).
    for (const i of group.inputIndices.slice(1)) {
      const w = tx.witnesses[i];
      if (!w) break;
      add(w);
    }
    for (let i = tx.inputs.length; i < tx.witnesses.length; i++) add(tx.witnesses[i] as Uint8Array);
    const pubkey = recoverCompressed(h.digest(), sig);
    if (!pubkey) return -11;
    return equalBytes(blake160(pubkey), Buffer.from(args.slice(2), 'hex')) ? 0 : -31;
  },
};
