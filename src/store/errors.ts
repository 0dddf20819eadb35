/** The store domain's refusals. (StoreError and StorageError, in codec, are failures, not refusals.) */
import { DomainError } from '../codec/index.ts';

/** Every code, with when it is thrown. */
export const STORE_ERROR_CODES = {
  BackupPathInvalid: 'a backup destination refused before anything was written',
} as const;
export type StoreErrorCode = keyof typeof STORE_ERROR_CODES;

/** A backup destination refused (fnn's `InvalidParameter:` text, field `path`). */
export class BackupPathError extends DomainError<'BackupPathInvalid', undefined> {
  constructor(message: string) {
    super('BackupPathInvalid', message);
  }
}
