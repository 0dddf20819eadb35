/**
 * The RPC server: JSON-RPC over HTTP `POST /` and over WebSocket on the same address, CORS,
 * body-size limit, and the bind rule (no public listener without an auth key).
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import Fastify, {
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import { type WebSocket, WebSocketServer } from 'ws';
import type { Authorizer } from './auth.ts';
import { isPrivateHost, parseHostPort } from './bind.ts';
import { installDashboard, upgradeAuthorization } from './dashboard.ts';
import { Dispatcher, type DispatchLogger, ERR, stringify } from './dispatch.ts';
import type { MethodSpec, RpcConnection } from './method.ts';

export interface RpcServerOptions {
  listeningAddr: string;
  methods: MethodSpec[];
  auth: Authorizer;
  corsEnabled: boolean;
  corsAllowedOrigins: string[];
  maxBodySize: number;
  /** Serve the web dashboard at `/dashboard/` (rpc.dashboard). */
  dashboard?: boolean;
  logger?: DispatchLogger & { info(obj: object, msg: string): void };
  /** Told of every call answered (metrics): see `Dispatcher`. */
  onAnswered?: (method: string, code: number) => void;
  /**
   * Holds an answer or notification until the state it reports is durable (the store's
   * `Durability.whenDurable`): a client never learns of a state a crash could undo.
   */
  release?: (fn: () => void) => void;
}

export interface RpcServer {
  /** `http://host:port` actually bound (port resolved when 0 was asked). */
  url: string;
  dispatcher: Dispatcher;
  close(): Promise<void>;
}

/** Per-connection notification backlog above which a slow WebSocket subscriber is dropped. */
const WS_MAX_BUFFERED = 8 * 1024 * 1024;

/** The seed's bind rule: no RPC on a public or unspecified address without an auth key. */
export function assertBindAllowed(listeningAddr: string, authEnabled: boolean): void {
  const { host } = parseHostPort(listeningAddr);
  if (!isPrivateHost(host) && !authEnabled) {
    throw new Error(
      `refusing to serve RPC on public address ${listeningAddr} without rpc.auth_public_key ` +
        '(authentication is mandatory on public and unspecified addresses)',
    );
  }
}

export async function startRpcServer(opts: RpcServerOptions): Promise<RpcServer> {
  const { host, port } = parseHostPort(opts.listeningAddr);
  assertBindAllowed(opts.listeningAddr, opts.auth.enabled);
  const dispatcher = new Dispatcher(opts.methods, opts.auth, opts.logger, opts.onAnswered);
  const release = opts.release ?? ((fn: () => void) => fn());
  const durable = () => new Promise<void>((resolve) => release(resolve));
  const app = Fastify({ logger: false, bodyLimit: opts.maxBodySize, return503OnClosing: false });

  app.removeAllContentTypeParsers();
  app.addContentTypeParser(/^application\/json(\s*;.*)?$/i, { parseAs: 'string' }, (_req, body, done) =>
    done(null, body),
  );
  app.setErrorHandler((err: FastifyError, _req, reply) => sendEnvelopeError(reply, err, opts.maxBodySize));
  app.setNotFoundHandler((_req, reply) =>
    reply.code(404).send({
      jsonrpc: '2.0',
      error: { code: ERR.INVALID_REQUEST, message: 'Invalid request: POST / only' },
      id: null,
    }),
  );
  if (opts.corsEnabled) installCors(app, opts.corsAllowedOrigins);
  if (opts.dashboard) installDashboard(app);

  app.get('/', (_req, reply) =>
    reply
      .code(405)
      .header('allow', 'POST')
      .send({
        jsonrpc: '2.0',
        error: {
          code: ERR.INVALID_REQUEST,
          message: 'Invalid request: use POST with a JSON-RPC body, or a WebSocket upgrade',
        },
        id: null,
      }),
  );
  app.post('/', async (req: FastifyRequest, reply: FastifyReply) => {
    const out = await dispatcher.handleText(String(req.body ?? ''), req.headers.authorization, {
      transport: 'http',
    });
    await durable();
    if (out === undefined) return reply.code(204).send();
    return reply.header('content-type', 'application/json; charset=utf-8').send(out);
  });

  // WebSocket upgrades are taken off the HTTP server directly: a fastify plugin would add hooks to
  // every plain HTTP request, which costs a fifth of the throughput of the hot path.
  const wss = new WebSocketServer({ noServer: true, maxPayload: opts.maxBodySize });
  app.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    if ((req.url ?? '/').split('?')[0] !== '/') {
      socket.destroy();
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) =>
      serveWebSocket(
        ws,
        socket,
        upgradeAuthorization(req.headers.authorization, req.url),
        dispatcher,
        release,
      ),
    );
  });

  await app.listen({ host, port });
  const addr = app.server.address();
  const boundPort = typeof addr === 'object' && addr ? addr.port : port;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${boundPort}`;
  opts.logger?.info(
    {
      url,
      methods: dispatcher.names().length,
      auth: opts.auth.enabled,
      ...(opts.dashboard ? { dashboard: `${url}/dashboard/` } : {}),
    },
    'rpc server listening',
  );
  return {
    url,
    dispatcher,
    close: async () => {
      for (const ws of wss.clients) ws.terminate();
      wss.close();
      await app.close();
    },
  };
}

let nextConnectionId = 1;

function serveWebSocket(
  socket: WebSocket,
  raw: Duplex,
  authorization: string | undefined,
  dispatcher: Dispatcher,
  release: (fn: () => void) => void,
): void {
  const closers: (() => void)[] = [];
  // Frames released together (one durability flush releases the answers and notifications of
  // every payment it covers) leave in one socket write: the socket is corked at the first and
  // uncorked once the releasing code has run, instead of a system call per frame.
  let corked = false;
  const send = (text: string) => {
    if (socket.readyState !== socket.OPEN) return;
    if (!corked) {
      corked = true;
      raw.cork();
      process.nextTick(() => {
        corked = false;
        raw.uncork();
      });
    }
    socket.send(text);
  };
  const connection: RpcConnection = {
    id: nextConnectionId++,
    notify(method, params) {
      if (socket.readyState !== socket.OPEN) return;
      if (socket.bufferedAmount > WS_MAX_BUFFERED) {
        socket.close(1013, 'subscriber too slow');
        return;
      }
      const text = stringify({ jsonrpc: '2.0', method, params });
      release(() => send(text));
    },
    onClose: (fn) => closers.push(fn),
  };
  socket.on('close', () => {
    for (const fn of closers) fn();
  });
  socket.on('message', async (data, isBinary) => {
    const text = isBinary ? Buffer.from(data as Buffer).toString('utf8') : data.toString();
    const out = await dispatcher.handleText(text, authorization, { transport: 'ws', connection });
    if (out === undefined) return;
    release(() => send(out));
  });
}

function sendEnvelopeError(reply: FastifyReply, err: FastifyError, maxBodySize: number) {
  let status = err.statusCode ?? 500;
  let message = 'Internal error';
  let code: number = ERR.INTERNAL;
  if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    code = ERR.INVALID_REQUEST;
    message = `Invalid request: body exceeds the limit of ${maxBodySize} bytes`;
    status = 413;
  } else if (
    err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' ||
    err.code === 'FST_ERR_CTP_INVALID_CONTENT_LENGTH'
  ) {
    code = ERR.INVALID_REQUEST;
    message = 'Invalid request: Content-Type must be application/json';
    status = 415;
  } else if (err.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') {
    code = ERR.INVALID_REQUEST;
    message = 'Invalid request: empty body';
    status = 400;
  } else if (status < 500) {
    code = ERR.INVALID_REQUEST;
    message = `Invalid request: ${err.message}`;
  }
  return reply.code(status).send({ jsonrpc: '2.0', error: { code, message }, id: null });
}

function installCors(app: FastifyInstance, allowed: string[]) {
  const allowAll = allowed.length === 0;
  const originFor = (origin: string | undefined): string | undefined => {
    if (allowAll) return '*';
    return origin && allowed.includes(origin) ? origin : undefined;
  };
  app.addHook('onRequest', async (req, reply) => {
    const origin = originFor(req.headers.origin);
    if (origin) {
      reply.header('access-control-allow-origin', origin);
      if (!allowAll) reply.header('vary', 'Origin');
    }
  });
  app.options('*', (req, reply) => {
    const origin = originFor(req.headers.origin);
    if (!origin) return reply.code(403).send();
    return reply
      .code(204)
      .header('access-control-allow-methods', 'POST, OPTIONS')
      .header(
        'access-control-allow-headers',
        req.headers['access-control-request-headers'] ?? 'content-type, authorization',
      )
      .header('access-control-max-age', '86400')
      .send();
  });
}
