/** The errors a Strand client throws: what the node answered, and what never reached it. */

/** JSON-RPC error codes a Strand node answers with (docs/reference/fiber-rpc.md §5). */
export const RpcErrorCode = {
  /** The body is not JSON. */
  ParseError: -32700,
  /** Not a JSON-RPC 2.0 request. */
  InvalidRequest: -32600,
  /** No such method, or its module is not enabled (`rpc.enabled_modules`). */
  MethodNotFound: -32601,
  /** A param is missing or malformed; the message names the field. Nothing changed. */
  InvalidParams: -32602,
  /** A bug in the node. */
  InternalError: -32603,
  /** The node refused the request (Fiber's error texts: a channel not found, no route, …). */
  ServerError: -32000,
  /** The Biscuit token is missing, invalid, revoked, or lacks the method's permission. */
  Unauthorized: -32999,
} as const;
export type RpcErrorCodeName = keyof typeof RpcErrorCode;

const NAMES = new Map<number, RpcErrorCodeName>(
  Object.entries(RpcErrorCode).map(([name, code]) => [code, name as RpcErrorCodeName]),
);

/** A JSON-RPC error object answered by the node. */
export class RpcError extends Error {
  override readonly name = 'RpcError';
  readonly code: number;
  /** Extra detail some errors carry (the request's params for invoice refusals, a storage code, …). */
  readonly data: unknown;
  readonly method: string;

  constructor(method: string, error: { code: number; message: string; data?: unknown }) {
    super(error.message);
    this.method = method;
    this.code = error.code;
    this.data = error.data;
  }

  /** The standard name of the code (`InvalidParams`), or undefined for another code. */
  get codeName(): RpcErrorCodeName | undefined {
    return NAMES.get(this.code);
  }

  /**
   * The refusal's code a Strand node names in `error.data.error_code` (`TlcNotFound`, …; the list
   * is in docs/rpc.md), or undefined (an error that echoes the params, or a node that sends none).
   * Branch on it rather than on the message, which is fnn's text.
   */
  get errorCode(): string | undefined {
    const code = (this.data as { error_code?: unknown } | null | undefined)?.error_code;
    return typeof code === 'string' ? code : undefined;
  }

  /** Whether this error carries the named code: `if (e.is('Unauthorized'))`. */
  is(name: RpcErrorCodeName): boolean {
    return this.code === RpcErrorCode[name];
  }
}

/** The node could not be reached or answered something that is no JSON-RPC reply. */
export class RpcTransportError extends Error {
  override readonly name = 'RpcTransportError';
  readonly status: number | undefined;

  constructor(message: string, options: { status?: number; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.status = options.status;
  }
}
