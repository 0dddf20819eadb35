/**
 * Errors are values with a kind. Domain code throws these; only the RPC layer maps them to
 * JSON-RPC codes (InvalidParams → -32602, DomainError → -32000 with the message text as is).
 */
export class StrandError extends Error {
  constructor(
    message: string,
    /** Optional structured data returned as JSON-RPC `error.data`. */
    readonly data?: unknown,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** Input that does not match a method's schema or a field's format. JSON-RPC -32602. */
export class InvalidParams extends StrandError {}

/** A business rule refused the request (Fiber message texts). JSON-RPC -32000. */
export class DomainError extends StrandError {}

/** Stored data that cannot be read by this version (newer schema, corrupt row). */
export class StoreError extends StrandError {}

/** SQLite result codes that mean the storage itself failed, not the data or the query. */
const STORAGE_CODES = /^SQLITE_(FULL|IOERR|READONLY|CANTOPEN)/;

/**
 * The store could not write: the disk is full (`SQLITE_FULL`), or the file system failed
 * (`SQLITE_IOERR…`, `SQLITE_READONLY…`, `SQLITE_CANTOPEN`). The failed write left nothing behind;
 * what was committed before stays. `data.code` names the failure for RPC callers.
 */
export class StorageError extends StoreError {
  constructor(
    readonly code: string,
    detail: string,
  ) {
    super(`storage failure: ${detail} (${code})`, { code });
  }

  /** `e` as a StorageError when it is a storage failure (a better-sqlite3 error with such a code). */
  static from(e: unknown): StorageError | undefined {
    if (e instanceof StorageError) return e;
    const code = (e as { code?: unknown } | null)?.code;
    if (typeof code !== 'string' || !STORAGE_CODES.test(code)) return undefined;
    return new StorageError(code, (e as Error).message);
  }
}
