/**
 * The `store/` layer's entry point: what other folders may use of it (the layer rule of
 * docs/architecture.md, `tools/check-layers.ts`). Files inside the folder import each other directly.
 */

export type { BackupResult } from './backup.ts';
export { backupNode } from './backup.ts';
export type { StoreChange } from './changes.ts';
export { StoreChangeBus } from './changes.ts';
export { type Checkpointer, type CheckpointStats, startCheckpointer } from './checkpointer.ts';
export type { CopiedTable } from './copy.ts';
export { copySqliteToPostgres } from './copy.ts';
export type { Db, DomainSchema, SqliteDb } from './db.ts';
export { isSqlite, openDatabase, watchPageQuota } from './db.ts';
export type { Durability } from './durability.ts';
export { IMMEDIATE_DURABILITY, WalDurability } from './durability.ts';
export { BackupPathError, STORE_ERROR_CODES, type StoreErrorCode } from './errors.ts';
export { checkNodeOwnership, nodeMetaSchema } from './node-meta.ts';
export type { LeaseOptions, StoreLocation } from './open.ts';
export { isPostgresUrl, openStore } from './open.ts';
export type { LeaseLossCause } from './postgres/pg-db.ts';
export { PgDb } from './postgres/pg-db.ts';
export { prepareSchemas, redactedUrl, urlWithSchema } from './postgres/schemas.ts';
export { sqliteOf, TurnTransactionDb } from './turn-transaction.ts';
