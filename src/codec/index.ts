/**
 * The `codec/` layer's entry point: what other folders may use of it (the layer rule of
 * docs/architecture.md, `tools/check-layers.ts`). Files inside the folder import each other directly.
 */

export { ArcodeError, arCompress, arDecompress } from './arcode.ts';
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
export { bytesToHex, hexToBytes, toHexQuantity, U32_MAX, U64_MAX, U128_MAX } from './hex.ts';
export type { Bytes } from './molecule.ts';
export {
  byte,
  compareBytes,
  concat,
  equalBytes,
  fixed,
  fixvec,
  HASH_TYPE_BYTE,
  MoleculeError,
  option,
  readCompatibleTable,
  readFixvec,
  readOption,
  readStruct,
  readTable,
  readU32le,
  readUintLe,
  readUnion,
  readUtf8String,
  table,
  u32le,
  uintLe,
  union,
  utf8String,
} from './molecule.ts';
