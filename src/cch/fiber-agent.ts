/**
 * The Fiber side of the hub: the node's own RPC methods (`new_invoice`, `send_payment`,
 * `settle_invoice`, …) and its store changes. As fnn v0.8, the hub runs either inside the node
 * (`services: [..., cch]`: the calls go straight to the node's method handlers, the changes come
 * from its bus) or as a separate service that follows a node over HTTP JSON-RPC and the WebSocket
 * `subscribe_store_changes` (`cch.fiber_rpc_url`), reconnecting when the socket drops.
 */
import WebSocket from 'ws';
import { createClient, RpcError } from '../client/index.ts';
import type { StoreChange } from '../store/index.ts';

export interface FiberAgent {
  // biome-ignore lint/suspicious/noExplicitAny: results are the node's JSON, read by the caller
  call(method: string, params: object): Promise<any>;
  /**
   * Store changes until the returned function is called. `onConnected` runs each time the feed
   * (re)starts: changes made while it was down are not replayed, so the hub re-reads its orders then.
   */
  subscribe(listener: (c: StoreChange) => void, onConnected: () => void): () => void;
  /**
   * The preimage a successful payment learned, when the agent can read it (in-process only: no
   * RPC answers it). A hub that missed the payment's `PutPreimage` (it started after the node
   * resumed and finished the payment) reads it here.
   */
  paymentPreimage?(paymentHash: string): string | undefined;
}

/** The reason text of a failed call, as the node answered it. */
export const errorText = (e: unknown): string =>
  e instanceof RpcError ? e.message : e instanceof Error ? e.message : String(e);

/** fnn's rule: a `fiber_rpc_url` is `http(s)://host:port`; the WebSocket is the same with `ws(s)`. */
export function checkFiberRpcUrl(url: string): string {
  if (!/^https?:\/\/[^/\s]+/.test(url)) throw new Error('fiber_rpc_url must start with http:// or https://');
  return url.replace(/^http/, 'ws');
}

export function rpcFiberAgent(
  url: string,
  opts: { token?: string; reconnectMs?: number; onLog?: (msg: string, err?: string) => void } = {},
): FiberAgent {
  const wsUrl = checkFiberRpcUrl(url);
  const client = createClient({ url, token: opts.token, timeoutMs: 30_000 });
  return {
    call: (method, params) => client.request(method, params),
    subscribe(listener, onConnected) {
      let stopped = false;
      let socket: WebSocket | undefined;
      let timer: NodeJS.Timeout | undefined;
      let failures = 0;
      const connect = () => {
        if (stopped) return;
        const ws = new WebSocket(wsUrl, {
          headers: opts.token ? { authorization: `Bearer ${opts.token}` } : {},
        });
        socket = ws;
        ws.on('open', () =>
          ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'subscribe_store_changes', params: [] })),
        );
        ws.on('message', (data) => {
          let msg: {
            id?: number;
            result?: unknown;
            error?: { message: string };
            method?: string;
            params?: { result?: StoreChange };
          };
          try {
            msg = JSON.parse(String(data));
          } catch {
            return;
          }
          if (msg.id === 1) {
            if (!msg.error) failures = 0;
            if (msg.error) {
              opts.onLog?.('subscribe_store_changes refused', msg.error.message);
              ws.close();
            } else onConnected();
          } else if (msg.method === 'store_changes' && msg.params?.result) listener(msg.params.result);
        });
        ws.on('error', (e) => opts.onLog?.('store changes socket failed', e.message));
        ws.on('close', () => {
          if (stopped) return;
          // Backs off to 30 s while the node is away or refuses (no `pubsub` module, no permission).
          timer = setTimeout(connect, Math.min((opts.reconnectMs ?? 1000) * 2 ** failures++, 30_000));
        });
      };
      connect();
      return () => {
        stopped = true;
        clearTimeout(timer);
        socket?.close();
      };
    },
  };
}

/** What the in-process agent needs of a method spec (`rpc/method.ts` MethodSpec fits). */
export interface LocalMethod {
  name: string;
  params: {
    safeParse(
      v: unknown,
    ): { success: true; data: unknown } | { success: false; error: { issues: { message: string }[] } };
  } | null;
  handler(params: never, ctx: { transport: 'http' }): unknown;
}

/** The in-process agent: the node's own method handlers, params validated as the RPC server does. */
export function inProcessFiberAgent(
  methods: LocalMethod[],
  changes: { subscribe(listener: (c: StoreChange) => void): () => void },
  paymentPreimage?: (paymentHash: string) => string | undefined,
): FiberAgent {
  const byName = new Map(methods.map((m) => [m.name, m]));
  return {
    async call(name, params) {
      const spec = byName.get(name);
      if (!spec?.params) throw new Error(`the node has no method ${name} (is its module enabled?)`);
      const parsed = spec.params.safeParse(params);
      if (!parsed.success) throw new Error(`Invalid params: ${parsed.error.issues[0]?.message ?? ''}`);
      return await spec.handler(parsed.data as never, { transport: 'http' });
    },
    subscribe(listener, onConnected) {
      const unsubscribe = changes.subscribe(listener);
      queueMicrotask(onConnected);
      return unsubscribe;
    },
    paymentPreimage,
  };
}
