/**
 * The JSON-RPC 2.0 envelope, independent of the transport: parse, validate the request shape,
 * authorise, validate params, call the handler, map errors. HTTP and WebSocket both feed text in
 * and get text (or nothing, for notifications) out.
 */
import { z } from 'zod';
import { DomainError, InvalidParams, StorageError, StrandError } from '../codec/index.ts';
import type { Authorizer } from './auth.ts';
import { errorDataOf, jsonRpcCodeOf } from './error-codes.ts';
import type { CallContext, MethodSpec } from './method.ts';
import { PERMISSIONS } from './permissions.ts';
import { echo } from './schema.ts';

export const ERR = {
  PARSE: -32700,
  INVALID_REQUEST: -32600,
  METHOD_NOT_FOUND: -32601,
  INVALID_PARAMS: -32602,
  INTERNAL: -32603,
  DOMAIN: -32000,
  UNAUTHORIZED: -32999,
} as const;

type Id = string | number | null;

export interface JsonRpcError {
  code: number;
  message: string;
  data?: unknown;
}

export type JsonRpcResponse =
  | { jsonrpc: '2.0'; result: unknown; id: Id }
  | { jsonrpc: '2.0'; error: JsonRpcError; id: Id };

export interface DispatchLogger {
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** Upper bound on the entries of one batch: a batch must not become a way around rate limits. */
export const MAX_BATCH = 1000;

export class Dispatcher {
  private readonly methods = new Map<string, MethodSpec>();

  constructor(
    specs: MethodSpec[],
    private readonly auth: Authorizer,
    private readonly log?: DispatchLogger,
    /** Told of every call answered: the method (`unknown` for names not served) and the code, 0 for a result. */
    private readonly onAnswered?: (method: string, code: number) => void,
  ) {
    for (const spec of specs) {
      if (this.methods.has(spec.name)) throw new Error(`RPC method ${spec.name} registered twice`);
      // Fail at start-up, not at call time: a method without a rule could never be authorised.
      if (!PERMISSIONS[spec.name])
        throw new Error(`RPC method ${spec.name} has no entry in the permission table`);
      this.methods.set(spec.name, spec);
    }
  }

  has(name: string): boolean {
    return this.methods.has(name);
  }

  names(): string[] {
    return [...this.methods.keys()];
  }

  /**
   * Handles one HTTP body or WebSocket message. Returns the serialised response, or undefined
   * when there is nothing to answer (notifications only).
   */
  async handleText(
    text: string,
    authorization: string | undefined,
    ctx: CallContext,
  ): Promise<string | undefined> {
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return JSON.stringify(failure(null, ERR.PARSE, 'Parse error'));
    }
    const out = await this.handleValue(body, authorization, ctx);
    return out === undefined ? undefined : stringify(out);
  }

  async handleValue(
    body: unknown,
    authorization: string | undefined,
    ctx: CallContext,
  ): Promise<JsonRpcResponse | JsonRpcResponse[] | undefined> {
    if (Array.isArray(body)) {
      if (body.length === 0) return failure(null, ERR.INVALID_REQUEST, 'Invalid request: empty batch');
      if (body.length > MAX_BATCH) {
        return failure(
          null,
          ERR.INVALID_REQUEST,
          `Invalid request: batch of ${body.length} exceeds ${MAX_BATCH} entries`,
        );
      }
      const results = await Promise.all(body.map((entry) => this.handleOne(entry, authorization, ctx)));
      const answered = results.filter((r): r is JsonRpcResponse => r !== undefined);
      return answered.length > 0 ? answered : undefined;
    }
    return this.handleOne(body, authorization, ctx);
  }

  private async handleOne(req: unknown, authorization: string | undefined, ctx: CallContext) {
    if (!req || typeof req !== 'object' || Array.isArray(req)) {
      return failure(null, ERR.INVALID_REQUEST, 'Invalid request: expected a JSON-RPC request object');
    }
    const r = req as Record<string, unknown>;
    const hasId = 'id' in r;
    const id = hasId ? r.id : null;
    if (
      hasId &&
      !(id === null || typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)))
    ) {
      return failure(null, ERR.INVALID_REQUEST, 'Invalid request: id must be a number, a string or null');
    }
    const reqId = id as Id;
    if (r.jsonrpc !== '2.0')
      return failure(reqId, ERR.INVALID_REQUEST, 'Invalid request: jsonrpc must be "2.0"');
    if (typeof r.method !== 'string' || r.method.length === 0) {
      return failure(reqId, ERR.INVALID_REQUEST, 'Invalid request: method must be a non-empty string');
    }
    const response = await this.call(r.method, r.params, reqId, authorization, ctx);
    this.onAnswered?.(
      this.methods.has(r.method) ? r.method : 'unknown',
      'error' in response ? response.error.code : 0,
    );
    // A notification (no id) gets no answer, whatever happened.
    return hasId ? response : undefined;
  }

  private async call(
    name: string,
    rawParams: unknown,
    id: Id,
    authorization: string | undefined,
    ctx: CallContext,
  ): Promise<JsonRpcResponse> {
    const spec = this.methods.get(name);
    // Authorisation comes first: a caller without the right learns nothing, not even whether
    // the method exists or its module is enabled. Names outside the permission table only need
    // a valid token to be told that they do not exist.
    let callerNodeId: string | undefined;
    if (PERMISSIONS[name]) {
      const granted = this.auth.check(name, authorization);
      if (!granted.ok) {
        if (this.auth.enabled) this.log?.warn({ method: name, reason: granted.reason }, 'rpc call refused');
        return failure(id, ERR.UNAUTHORIZED, 'Unauthorized');
      }
      callerNodeId = granted.callerNodeId;
    } else if (!this.auth.authenticate(authorization)) {
      return failure(id, ERR.UNAUTHORIZED, 'Unauthorized');
    }
    if (!spec) return failure(id, ERR.METHOD_NOT_FOUND, 'Method not found');
    let params: unknown;
    try {
      params = parseParams(spec, rawParams);
    } catch (e) {
      return failure(id, ERR.INVALID_PARAMS, (e as Error).message);
    }
    // fnn's params structs ignore unknown fields (no deny_unknown_fields): accepted, but a typo
    // such as `ammount` is worth a line in the log.
    const unknown = unknownFields(spec, rawParams);
    if (unknown.length > 0)
      this.log?.warn(
        { method: name, fields: unknown },
        'rpc params fields unknown to the method are ignored',
      );
    try {
      const result = await spec.handler(params as never, { ...ctx, callerNodeId });
      return { jsonrpc: '2.0', result: result === undefined ? null : result, id };
    } catch (e) {
      return failure(id, ...this.mapError(name, e));
    }
  }

  private mapError(method: string, e: unknown): [number, string, unknown?] {
    // A handler's own refusal of a parameter carries the reference's text as is (e.g. a cursor).
    if (e instanceof InvalidParams) return [ERR.INVALID_PARAMS, e.message, e.data];
    // A refusal: its code picks the JSON-RPC code (one table) and rides along in `error.data`.
    if (e instanceof DomainError) return [jsonRpcCodeOf(e.code), e.message, errorDataOf(e)];
    if (e instanceof StrandError) return [ERR.DOMAIN, e.message, e.data];
    // A full disk or a failing file system is named, with its code, not hidden as an internal error.
    const storage = StorageError.from(e);
    if (storage) {
      this.log?.error({ method, err: storage.message }, 'rpc call not stored');
      return [ERR.DOMAIN, storage.message, storage.data];
    }
    this.log?.error({ method, err: e }, 'rpc handler failed');
    return [ERR.INTERNAL, 'Internal error'];
  }
}

/** `params` is `[]` or `[ {…} ]` (absent counts as `[]`). */
function parseParams(spec: MethodSpec, raw: unknown): unknown {
  if (raw !== undefined && !Array.isArray(raw)) {
    throw new Error('Invalid params: params must be an array holding one object, e.g. [{}] or []');
  }
  const list = (raw ?? []) as unknown[];
  if (spec.positional) {
    const parsed = spec.positional.safeParse(list);
    if (!parsed.success) throw new Error(`Invalid params: ${describeIssue(parsed.error)}`);
    return parsed.data;
  }
  if (list.length > 1) throw new Error('Invalid params: params must hold at most one object');
  const arg = list[0];
  if (spec.params === null) {
    const empty = arg === undefined || (isPlainObject(arg) && Object.keys(arg).length === 0);
    if (!empty) throw new Error(`Invalid params: ${spec.name} takes no parameters`);
    return undefined;
  }
  if (arg !== undefined && !isPlainObject(arg)) {
    throw new Error('Invalid params: the element of params must be an object');
  }
  const parsed = spec.params.safeParse(arg ?? {});
  if (!parsed.success) throw new Error(`Invalid params: ${describeIssue(parsed.error)}`);
  return parsed.data;
}

/** Top-level keys of the params object that the method's schema does not name (at most 10, clipped). */
function unknownFields(spec: MethodSpec, raw: unknown): string[] {
  if (!(spec.params instanceof z.ZodObject) || !Array.isArray(raw) || !isPlainObject(raw[0])) return [];
  const known = spec.params.shape as Record<string, unknown>;
  return Object.keys(raw[0])
    .filter((k) => !Object.hasOwn(known, k))
    .slice(0, 10)
    .map((k) => echo(k));
}

function describeIssue(error: z.ZodError): string {
  const issue = error.issues[0]!;
  const field = issue.path.length > 0 ? issue.path.join('.') : undefined;
  let message = issue.message;
  if (issue.code === 'invalid_type' && /received undefined/.test(message)) message = 'missing required field';
  return field ? `${field}: ${message}` : message;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Longest error message sent: a safety net behind the per-field echo limit. */
const MAX_MESSAGE = 1000;

function failure(id: Id, code: number, message: string, data?: unknown): JsonRpcResponse {
  if (message.length > MAX_MESSAGE) message = `${message.slice(0, MAX_MESSAGE)}…`;
  const error: JsonRpcError = data === undefined ? { code, message } : { code, message, data };
  return { jsonrpc: '2.0', error, id };
}

/**
 * JSON with bigints written as hex quantities (a handler that forgot to convert still answers).
 * The replacer is only used when needed: it costs a call per key on the hot path.
 */
export function stringify(value: unknown): string {
  try {
    return JSON.stringify(value);
  } catch (e) {
    if (!(e instanceof TypeError)) throw e;
    return JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? '0x' + v.toString(16) : v));
  }
}
