/**
 * The `store/` layer's entry point: what other folders may use of it (the layer rule of
 * docs/architecture.md, `tools/check-layers.ts`). Files inside the folder import each other directly.
 */

export type { BackupResult } from './backup.ts';
export { backupNode } from './backup.ts';
export type { StoreChange } from './changes.ts';
export { StoreChangeBus } from './changes.ts';
export type { Db, DomainSchema } from './db.ts';
export { openDatabase, watchPageQuota } from './db.ts';
export { BackupPathError, STORE_ERROR_CODES, type StoreErrorCode } from './errors.ts';
export { checkNodeOwnership, nodeMetaSchema } from './node-meta.ts';
