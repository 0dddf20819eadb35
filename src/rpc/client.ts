/** A small JSON-RPC client for Strand's own tools (`strand rpc`, the devnet). */
export class RpcCallError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

export interface RpcClient {
  readonly url: string;
  // biome-ignore lint/suspicious/noExplicitAny: results are JSON the caller knows the shape of
  call<T = any>(method: string, params?: unknown): Promise<T>;
}

/** `params`: an object (sent as `[obj]`), an array (sent as is) or nothing (`[]`). */
export function createRpcClient(url: string, token?: string, timeoutMs = 60_000): RpcClient {
  let nextId = 1;
  return {
    url,
    async call(method, params) {
      const list = params === undefined ? [] : Array.isArray(params) ? params : [params];
      const res = await fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(token ? { authorization: `Bearer ${token}` } : {}),
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params: list }),
        signal: AbortSignal.timeout(timeoutMs),
      });
      const text = await res.text();
      let reply: { result?: unknown; error?: { code: number; message: string; data?: unknown } };
      try {
        reply = JSON.parse(text);
      } catch {
        throw new RpcCallError(-32700, `HTTP ${res.status}: ${text.slice(0, 200)}`);
      }
      if (reply.error) throw new RpcCallError(reply.error.code, reply.error.message, reply.error.data);
      return reply.result as never;
    },
  };
}
