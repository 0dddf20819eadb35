/**
 * Fiber's funding lock (fiber-scripts `funding-lock`, reference §5.5): one input per group; the
 * raw witness is `empty WitnessArgs (16 bytes) ‖ x-only key (32) ‖ BIP340 signature (64)` over
 * `H(raw tx with cell_deps emptied)`, and `blake160(x-only key)` must equal args[0..20] — the
 * key being the MuSig2 aggregate of the two funding keys.
 * Exit codes: 5 multiple inputs, 6 witness length, 7 witness prefix, 8 auth, 1 short args.
 */
import { ccc } from '@ckb-ccc/core';
import { equalBytes } from '../../codec/index.ts';
import { blake160, verifySchnorr } from '../../crypto/index.ts';
import { EMPTY_WITNESS_ARGS, type ScriptVerifier } from './context.ts';

export const fundingLock: ScriptVerifier = {
  name: 'funding_lock',
  verify(tx, group) {
    if (group.inputIndices.length !== 1) return 5;
    const args = ccc.bytesFrom(group.script.args);
    if (args.length < 20) return 1;
    const w = tx.witnesses[group.inputIndices[0] as number];
    if (w?.length !== 112) return 6;
    if (!equalBytes(w.subarray(0, 16), EMPTY_WITNESS_ARGS)) return 7;
    return schnorrAuth(w.subarray(16, 48), w.subarray(48, 112), tx.messageWithoutDeps(), args.subarray(0, 20))
      ? 0
      : 8;
  },
};

/** ckb-auth algorithm 7: a BIP340 signature by an x-only key whose blake160 is `pkh`. */
export function schnorrAuth(xonly: Uint8Array, sig: Uint8Array, msg: Uint8Array, pkh: Uint8Array): boolean {
  return equalBytes(blake160(xonly), pkh) && verifySchnorr(sig, msg, xonly);
}
