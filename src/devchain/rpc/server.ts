/**
 * The dev chain's JSON-RPC endpoint (HTTP POST on `/`, single and batch requests, CORS open so a
 * browser-hosted node can call it). It listens on its own address, separate from any node's RPC.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import type { DevChain } from '../chain.ts';
import { ChainTxError } from '../errors.ts';
import { IndexerError } from '../indexer.ts';
import { devchainMethods, RpcError } from './methods.ts';

export interface DevchainRpcServer {
  url: string;
  port: number;
  close(): Promise<void>;
}

interface Request {
  jsonrpc?: unknown;
  id?: unknown;
  method?: unknown;
  params?: unknown;
}

export function buildDevchainRpc(chain: DevChain): FastifyInstance {
  const methods = devchainMethods(chain);
  const app = Fastify({ bodyLimit: 16 * 1024 * 1024, logger: false });
  app.addHook('onSend', async (_req, reply) => {
    reply.header('access-control-allow-origin', '*');
    reply.header('access-control-allow-headers', 'content-type, authorization');
    reply.header('access-control-allow-methods', 'POST, OPTIONS');
  });
  app.options('/*', async (_req, reply) => reply.code(204).send());
  app.options('/', async (_req, reply) => reply.code(204).send());
  // Accept any content type as JSON: some clients post without a JSON content type.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (_req, body, done) => {
    try {
      done(null, JSON.parse(body as string));
    } catch {
      done(null, { __parseError: true });
    }
  });
  app.post('/', async (req) => {
    const body = req.body as Request | Request[] | { __parseError: true };
    if (body && typeof body === 'object' && '__parseError' in body) {
      return { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } };
    }
    if (Array.isArray(body)) {
      if (body.length === 0 || body.length > 1000)
        return envelope(null, { code: -32600, message: 'Invalid Request' });
      return body.map((r) => call(methods, r));
    }
    return call(methods, body as Request);
  });
  return app;
}

function envelope(id: unknown, error: { code: number; message: string; data?: string }) {
  return { jsonrpc: '2.0', id: id ?? null, error };
}

function call(methods: ReturnType<typeof devchainMethods>, r: Request) {
  if (!r || typeof r !== 'object' || r.jsonrpc !== '2.0' || typeof r.method !== 'string') {
    return envelope(r?.id, { code: -32600, message: 'Invalid Request' });
  }
  const fn = methods.get(r.method);
  if (!fn) {
    // Said on stderr: a client (a reference node, a wallet) asking for what the dev chain lacks.
    process.stderr.write(`devchain: method not found: ${r.method.slice(0, 64)}\n`);
    return envelope(r.id, { code: -32601, message: 'Method not found' });
  }
  const params = r.params === undefined || r.params === null ? [] : r.params;
  if (!Array.isArray(params))
    return envelope(r.id, { code: -32602, message: 'InvalidParams: params must be an array' });
  try {
    return { jsonrpc: '2.0', id: r.id ?? null, result: fn(params) };
  } catch (e) {
    if (e instanceof RpcError) return envelope(r.id, { code: e.code, message: e.message });
    if (e instanceof ChainTxError)
      return envelope(r.id, { code: e.code, message: e.message, data: e.reason });
    if (e instanceof IndexerError) return envelope(r.id, { code: -1200, message: `Indexer: ${e.message}` });
    return envelope(r.id, { code: -1, message: `CKBInternalError: ${(e as Error).message}` });
  }
}

/** Starts the server on `host:port` (port 0 = any free port). */
export async function startDevchainRpc(
  chain: DevChain,
  host: string,
  port: number,
): Promise<DevchainRpcServer> {
  const app = buildDevchainRpc(chain);
  await app.listen({ host, port });
  const addr = app.server.address();
  const actual = typeof addr === 'object' && addr ? addr.port : port;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${actual}/`,
    port: actual,
    close: () => app.close(),
  };
}
