/**
 * The `crypto/` layer's entry point: what other folders may use of it (the layer rule of
 * docs/architecture.md, `tools/check-layers.ts`). Files inside the folder import each other directly.
 */

export { curve, curveBackend, schnorrVerify } from './curve.ts';
export { blake160, ckbHash, hashBackend, hashReady, sha256 } from './hash.ts';
export type { NodeIdentity } from './identity.ts';
export { identityFromSecret, isValidSecretKey, peerIdDigest, peerIdOf, publicKeyOf } from './identity.ts';
export {
  decryptWalletKey,
  loadOrCreateNodeKey,
  loadWalletKey,
  PASSWORD_ENV,
  writeWalletKey,
} from './keyfile.ts';
export {
  type CurveJob,
  type CurveThread,
  type CurveWorkAnswer,
  type CurveWorker,
  curveThread,
  MadeAhead,
  type MadeAheadOptions,
  startCurveWorker,
} from './made-ahead.ts';
export * as musig2Fast from './musig2-fast.ts';
export {
  compressedPubkey,
  lockArgsOf,
  recoverCompressed,
  signRecoverable,
  verifySchnorr,
} from './secp256k1.ts';
export { sighashAllMessage, signSighashAll } from './sighash.ts';
