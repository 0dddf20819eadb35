/**
 * `subscribe_store_changes` over the node's WebSocket (same address as HTTP, seed §Events), as
 * an async iterator. Each subscription owns one connection: every `store_changes` notification
 * on it is this subscription's, including one that overtakes the subscribe reply. Leaving a
 * `for await` loop (break, return, throw) calls `return()`, which cancels the subscription on
 * the node (`unsubscribe_store_changes`) and closes the connection. A connection the node closes
 * (it stopped, or dropped a subscriber that did not read) ends the iteration with an
 * `RpcTransportError`, so a consumer never waits on a dead subscription.
 */
import type WebSocket from 'ws';
import { RpcError, RpcTransportError } from './errors.ts';
import { authHeaders } from './http.ts';
import type { StoreChange } from './results.gen.ts';

export interface StoreChangeSubscription extends AsyncIterableIterator<StoreChange> {
  /** The node's id for this subscription. */
  readonly id: number;
  /**
   * Cancels the subscription on the node and closes its connection (what leaving a `for await`
   * does); resolves to whether the node still held it (false once the node closed the connection).
   */
  close(): Promise<boolean>;
}

export interface SubscribeOptions {
  /** The node's RPC URL (`http://…`; the WebSocket is on the same address). */
  url: string;
  token?: string;
  /** Limit in ms for connecting and for each request on the connection (default 60 000). */
  timeoutMs?: number;
  /** Extra headers on the upgrade request. */
  headers?: Record<string, string>;
}

type Pending = { resolve: (v: unknown) => void; reject: (e: Error) => void };

const DONE: IteratorReturnResult<undefined> = { done: true, value: undefined };

export async function subscribeStoreChanges(opts: SubscribeOptions): Promise<StoreChangeSubscription> {
  const timeoutMs = opts.timeoutMs ?? 60_000;
  // Loaded on first use: callers that never subscribe do not pay for it.
  const { default: WebSocketClass } = await import('ws');
  const socket: WebSocket = new WebSocketClass(opts.url.replace(/^http/, 'ws'), {
    headers: { ...opts.headers, ...authHeaders(opts.token) },
    handshakeTimeout: timeoutMs,
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', (e) =>
      reject(new RpcTransportError(`subscribe_store_changes: cannot connect to ${opts.url}: ${e.message}`)),
    );
  });

  const changes: StoreChange[] = [];
  const waiters: { resolve: (r: IteratorResult<StoreChange>) => void; reject: (e: Error) => void }[] = [];
  const pending = new Map<number, Pending>();
  /** Request id → method, to name the method in an error. */
  const methodOf = new Map<number, string>();
  let nextId = 1;
  /** Set once the iteration is over: by `return()` (no error) or by the connection (an error). */
  let ended = false;
  let failure: Error | undefined;

  socket.on('message', (data) => {
    let msg: {
      id?: number;
      result?: unknown;
      error?: { code: number; message: string; data?: unknown };
      method?: string;
      params?: { result?: unknown };
    };
    try {
      msg = JSON.parse(data.toString());
    } catch {
      return;
    }
    if (typeof msg.id === 'number' && pending.has(msg.id)) {
      const p = pending.get(msg.id)!;
      pending.delete(msg.id);
      if (msg.error) p.reject(new RpcError(methodOf.get(msg.id) ?? 'request', msg.error));
      else p.resolve(msg.result);
      methodOf.delete(msg.id);
    } else if (msg.method === 'store_changes' && msg.params && !ended) {
      const change = msg.params.result as StoreChange;
      const waiter = waiters.shift();
      if (waiter) waiter.resolve({ done: false, value: change });
      else changes.push(change);
    }
  });
  socket.on('error', () => {}); // the close that follows reports it
  socket.on('close', (code, reason) => {
    const err = new RpcTransportError(
      `store changes connection closed by the node (${code}${reason.length ? ` ${reason}` : ''})`,
    );
    for (const p of pending.values()) p.reject(err);
    pending.clear();
    if (ended) return;
    ended = true;
    failure = err;
    for (const w of waiters.splice(0)) w.reject(err);
  });

  const request = (method: string, params: unknown[]): Promise<unknown> => {
    if (socket.readyState !== socket.OPEN) {
      return Promise.reject(new RpcTransportError(`${method}: the connection is closed`));
    }
    const id = nextId++;
    methodOf.set(id, method);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new RpcTransportError(`${method}: no reply within ${timeoutMs} ms`));
      }, timeoutMs);
      pending.set(id, {
        resolve: (v) => {
          clearTimeout(timer);
          resolve(v);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      socket.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    });
  };

  let id: number;
  try {
    id = (await request('subscribe_store_changes', [])) as number;
  } catch (e) {
    ended = true;
    socket.close();
    throw e;
  }

  let closing: Promise<boolean> | undefined;
  /** Cancels on the node, then closes; the node's answer says whether it still had the subscription. */
  const close = (): Promise<boolean> => {
    if (closing) return closing;
    const connectionLost = ended;
    ended = true;
    failure = undefined;
    for (const w of waiters.splice(0)) w.resolve(DONE);
    changes.length = 0;
    if (connectionLost) {
      closing = Promise.resolve(false);
      return closing;
    }
    closing = (request('unsubscribe_store_changes', [id]) as Promise<boolean>)
      // The connection went down meanwhile: the node dropped the subscription with it.
      .catch((e) => {
        if (e instanceof RpcTransportError) return false;
        throw e;
      })
      .finally(() => socket.close(1000));
    return closing;
  };

  const iterator: StoreChangeSubscription = {
    id,
    close,
    next() {
      const change = changes.shift();
      if (change !== undefined) return Promise.resolve({ done: false, value: change });
      if (failure) {
        // Reported once; the iteration is over after that.
        const err = failure;
        failure = undefined;
        return Promise.reject(err);
      }
      if (ended) return Promise.resolve(DONE);
      return new Promise((resolve, reject) => waiters.push({ resolve, reject }));
    },
    async return() {
      await close();
      return DONE;
    },
    async throw(err?: unknown) {
      await close();
      throw err;
    },
    [Symbol.asyncIterator]() {
      return iterator;
    },
  };
  return iterator;
}
