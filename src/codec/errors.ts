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
