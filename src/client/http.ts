/** JSON-RPC 2.0 over HTTP POST: one request, one reply, errors thrown as `RpcError`. */
import { RpcError, RpcTransportError } from './errors.ts';

export interface HttpTransportOptions {
  url: string;
  /** A Biscuit token, sent as `Authorization: Bearer <token>`. */
  token?: string;
  /** Per-request time limit in ms (default 60 000). */
  timeoutMs?: number;
  /** Extra headers on every request. */
  headers?: Record<string, string>;
}

interface Reply {
  result?: unknown;
  error?: { code: number; message: string; data?: unknown };
}

/** `params` as the node reads them: an object becomes `[object]`, nothing becomes `[]`. */
export function paramsList(params: unknown): unknown[] {
  if (params === undefined) return [];
  return Array.isArray(params) ? params : [params];
}

export function authHeaders(token: string | undefined): Record<string, string> {
  return token ? { authorization: `Bearer ${token}` } : {};
}

export function createHttpTransport(opts: HttpTransportOptions) {
  let nextId = 1;
  const timeoutMs = opts.timeoutMs ?? 60_000;
  return async function request(method: string, params?: unknown): Promise<unknown> {
    const body = JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params: paramsList(params) });
    let res: Response;
    try {
      res = await fetch(opts.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...opts.headers, ...authHeaders(opts.token) },
        body,
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (e) {
      throw new RpcTransportError(`${method}: cannot reach ${opts.url}: ${(e as Error).message}`, {
        cause: e,
      });
    }
    const text = await res.text();
    let reply: Reply;
    try {
      reply = JSON.parse(text) as Reply;
      if (typeof reply !== 'object' || reply === null) throw new Error('not an object');
    } catch {
      throw new RpcTransportError(
        `${method}: HTTP ${res.status}, not a JSON-RPC reply: ${text.slice(0, 200)}`,
        {
          status: res.status,
        },
      );
    }
    // Envelope errors (body too large, wrong content type) come with an HTTP error status and a
    // JSON-RPC error object: the error object says more, so it wins.
    if (reply.error) throw new RpcError(method, reply.error);
    if (!('result' in reply)) {
      throw new RpcTransportError(`${method}: HTTP ${res.status}, a reply without result or error`, {
        status: res.status,
      });
    }
    return reply.result;
  };
}
