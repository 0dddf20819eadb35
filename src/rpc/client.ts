/**
 * A small JSON-RPC client for Strand's own tools (`strand rpc`, the devnet, the benchmarks).
 *
 * Over `node:http(s)` with a keep-alive agent, not `fetch`: on this class of machine a `fetch`
 * call costs ~0.4 ms of CPU (~0.24 ms without its abort signal) against ~0.09 ms for a request on
 * a kept-alive socket, and a benchmark's client shares the cores with the nodes it measures.
 */
import http from 'node:http';
import https from 'node:https';

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

/**
 * How long an idle kept-alive socket is kept, ms: below Node's default `keepAliveTimeout` (5 s),
 * so the client lets a socket go before a server with that default closes it under a request.
 */
const IDLE_SOCKET_MS = 4_000;

/** `params`: an object (sent as `[obj]`), an array (sent as is) or nothing (`[]`). */
export function createRpcClient(url: string, token?: string, timeoutMs = 60_000): RpcClient {
  let nextId = 1;
  const target = new URL(url);
  const transport = target.protocol === 'https:' ? https : http;
  // Idle sockets do not keep the process alive (the agent unrefs them).
  const agent = new transport.Agent({ keepAlive: true, timeout: IDLE_SOCKET_MS });
  const post = (body: string, retried = false): Promise<{ status: number; text: string }> =>
    new Promise((resolve, reject) => {
      const req = transport.request(
        target,
        {
          method: 'POST',
          agent,
          headers: {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
            ...(token ? { authorization: `Bearer ${token}` } : {}),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }),
          );
          res.on('error', reject);
        },
      );
      req.setTimeout(timeoutMs, () => req.destroy(new Error(`RPC ${url} timed out after ${timeoutMs} ms`)));
      req.on('error', (e: NodeJS.ErrnoException) => {
        // A kept-alive socket the server closed as we reused it: the request never reached the
        // server (it had closed the socket), so sending it again on a fresh socket is safe.
        if (req.reusedSocket && e.code === 'ECONNRESET' && !retried) post(body, true).then(resolve, reject);
        else reject(e);
      });
      req.end(body);
    });
  return {
    url,
    async call(method, params) {
      const list = params === undefined ? [] : Array.isArray(params) ? params : [params];
      const { status, text } = await post(
        JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params: list }),
      );
      let reply: { result?: unknown; error?: { code: number; message: string; data?: unknown } };
      try {
        reply = JSON.parse(text);
      } catch {
        throw new RpcCallError(-32700, `HTTP ${status}: ${text.slice(0, 200)}`);
      }
      if (reply.error) throw new RpcCallError(reply.error.code, reply.error.message, reply.error.data);
      return reply.result as never;
    },
  };
}
