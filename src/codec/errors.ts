/**
 * Errors are values with a kind. Domain code throws these; only the RPC layer maps them to
 * JSON-RPC codes (InvalidParams → -32602; a DomainError by its `code` through the table of
 * `rpc/error-codes.ts`, -32000 unless listed, with the message text as is).
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

/**
 * A business rule refused the request. Each domain folder has its subclass in its `errors.ts`
 * with a union of string codes (`ChannelError` with `'TlcNotFound' | …`); callers branch on
 * `code`, never on the text. The message is the Fiber (fnn) text as is: RPC clients read it.
 * `details` are typed facts for callers in the node; they are not sent over RPC.
 */
export abstract class DomainError<C extends string = string, D = unknown> extends StrandError {
  constructor(
    /**
     * What went wrong, stable across versions. The RPC layer sends it as `error.data.error_code`
     * when the error has no other data (`rpc/error-codes.ts`).
     */
    readonly code: C,
    message: string,
    readonly details?: D,
    data?: unknown,
  ) {
    super(message, data);
  }

  /**
   * `e` is an error of this class, with one of `codes` when some are given:
   * `ChannelError.is(e, 'TlcNotFound')`, the codes checked against the class's own.
   */
  static is<T extends DomainError>(
    this: abstract new (
      ...args: never[]
    ) => T,
    e: unknown,
    ...codes: T['code'][]
  ): e is T {
    // biome-ignore lint/complexity/noThisInStatic: `this` is the subclass named by the call (ChannelError.is).
    return e instanceof this && (codes.length === 0 || codes.includes(e.code));
  }

  /** The same error carrying `data` as its JSON-RPC `error.data` (e.g. the params, as fnn echoes them). */
  withData(data: unknown): this {
    const copy = Object.create(Object.getPrototypeOf(this)) as this;
    Object.defineProperties(copy, Object.getOwnPropertyDescriptors(this));
    Object.defineProperty(copy, 'data', { value: data, enumerable: true });
    return copy;
  }
}

/** The details type of code `C` in a domain's map of code → details (undefined when it has none). */
export type DetailsOf<M, C extends string> = C extends keyof M ? M[C] : undefined;

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
