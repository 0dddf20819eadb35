/**
 * The `codec/` layer's entry point: what other folders may use of it (the layer rule of
 * docs/architecture.md, `tools/check-layers.ts`). Files inside the folder import each other directly.
 */

export { ArcodeError, arCompress, arDecompress } from './arcode.ts';
export { cellOutputBytes, rawTxBytes, txBytes } from './ckb-tx.ts';
export {
  boundsEpochMs,
  checksEpochMs,
  MAX_TLC_EXPIRY_LIMIT,
  MIN_TLC_EXPIRY_DELTA,
  MS_PER_EPOCH_DEV,
  MS_PER_EPOCH_MAINNET,
  minTlcExpiryDelta,
} from './epoch-rules.ts';
export {
  type DetailsOf,
  DomainError,
  InvalidParams,
  StorageError,
  StoreError,
  StrandError,
} from './errors.ts';
export {
  bytesToHex,
  hexToBytes,
  SHANNONS_PER_CKB,
  toHexQuantity,
  U32_MAX,
  U64_MAX,
  U128_MAX,
} from './hex.ts';
export type { Bytes } from './molecule.ts';
export {
  compareBytes,
  concat,
  equalBytes,
  HASH_TYPE_BYTE,
  MoleculeError,
  readU32le,
  u32le,
} from './molecule.ts';
/** The declarative molecule schemas (`mol.table`, `mol.u64`, …) of `schema.ts`. */
export * as mol from './schema.ts';
