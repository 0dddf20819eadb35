/**
 * The typed Strand client (`strand/client`): one function per RPC method, params typed from the
 * node's own schemas (`params.gen.ts`), results from `results.ts`, errors as `RpcError` with the
 * JSON-RPC code, a Biscuit bearer token, and `subscribe_store_changes` as an async iterator.
 *
 *   const node = createClient({ url: 'http://127.0.0.1:8227', token });
 *   const info = await node.node_info();
 *
 * Methods keep the RPC names (`node.send_payment({...})`), so the method reference and the
 * client read the same. Nothing here imports the node, nor zod at run time (the result schemas
 * are a separate entry, `strand/client/results`); ws loads with the first subscription. A
 * one-shot caller such as a CLI pays for little more than this folder.
 */
import { RpcTransportError } from './errors.ts';
import { createHttpTransport, type HttpTransportOptions } from './http.ts';
import { RPC_METHOD_MODULES, type RpcMethod, type RpcParams } from './params.gen.ts';
import type { RpcResults } from './results.ts';
import { type StoreChangeSubscription, subscribeStoreChanges } from './subscription.ts';

export { RpcError, RpcErrorCode, type RpcErrorCodeName, RpcTransportError } from './errors.ts';
export type { Hash256, HexBytes, HexQuantity, Pubkey, RpcMethod, RpcParams } from './params.gen.ts';
export { RPC_METHOD_MODULES } from './params.gen.ts';
export type { RpcResults, StoreChange } from './results.ts';
export type { StoreChangeSubscription } from './subscription.ts';

/** Methods served over WebSocket only: the client reaches them through `subscribeStoreChanges`. */
const WEBSOCKET_ONLY = ['subscribe_store_changes', 'unsubscribe_store_changes'] as const;
type WebSocketOnly = (typeof WEBSOCKET_ONLY)[number];
export type HttpMethod = Exclude<RpcMethod, WebSocketOnly>;

/** A method's function: no argument, an optional params object (all fields optional), or a required one. */
export type MethodFunction<M extends RpcMethod> = RpcParams[M] extends undefined
  ? () => Promise<RpcResults[M]>
  : // biome-ignore lint/complexity/noBannedTypes: `{}` extends P exactly when every field of P is optional
    {} extends RpcParams[M]
    ? (params?: RpcParams[M]) => Promise<RpcResults[M]>
    : (params: RpcParams[M]) => Promise<RpcResults[M]>;

export type StrandMethods = { readonly [M in HttpMethod]: MethodFunction<M> };

export interface StrandClient extends StrandMethods {
  readonly url: string;
  /** A typed call by name: `call('get_payment', { payment_hash })`. */
  call<M extends HttpMethod>(method: M, ...params: Parameters<MethodFunction<M>>): Promise<RpcResults[M]>;
  /**
   * An untyped call, for a method this client version does not know: an object as params is sent
   * as `[object]`, an array as is, nothing as `[]`.
   */
  request(method: string, params?: unknown): Promise<unknown>;
  /** Opens a WebSocket, subscribes to store changes and yields each change (see subscription.ts). */
  subscribeStoreChanges(): Promise<StoreChangeSubscription>;
}

/** Anything with zod's `parse`: throws on a value it does not accept. */
export interface ResultSchema {
  parse(value: unknown): unknown;
}

export interface ClientOptions extends HttpTransportOptions {
  /**
   * Check each reply at run time: with `RESULT_SCHEMAS` (`strand/client/results`), a reply that
   * does not match its method's declared type throws `RpcTransportError` naming the method,
   * instead of reaching the application as a wrongly typed value (a node of another version).
   * The value returned is the parsed one: fields the schema does not declare are dropped.
   */
  resultSchemas?: Readonly<Record<string, ResultSchema>>;
}

export function createClient(options: ClientOptions | string): StrandClient {
  const opts: ClientOptions = typeof options === 'string' ? { url: options } : options;
  const send = createHttpTransport(opts);
  const schemas = opts.resultSchemas;
  const request = !schemas
    ? send
    : async (method: string, params?: unknown): Promise<unknown> => {
        const result = await send(method, params);
        const schema = Object.hasOwn(schemas, method) ? schemas[method] : undefined;
        if (!schema) return result;
        try {
          return schema.parse(result);
        } catch (e) {
          throw new RpcTransportError(`${method}: the reply does not match the declared result: ${e}`, {
            cause: e,
          });
        }
      };
  const methods: Record<string, (params?: unknown) => Promise<unknown>> = {};
  for (const name of Object.keys(RPC_METHOD_MODULES)) {
    if ((WEBSOCKET_ONLY as readonly string[]).includes(name)) continue;
    methods[name] = (params?: unknown) => request(name, params);
  }
  return {
    ...(methods as unknown as StrandMethods),
    url: opts.url,
    call: (method, ...params) => request(method, params[0]) as never,
    request,
    subscribeStoreChanges: () =>
      subscribeStoreChanges({
        url: opts.url,
        token: opts.token,
        timeoutMs: opts.timeoutMs,
        headers: opts.headers,
      }),
  };
}

/** A hex quantity from an amount: `toHex(100_000_000n)` is `'0x5f5e100'`. */
export function toHex(value: bigint | number): string {
  const v = BigInt(value);
  if (v < 0n) throw new RangeError(`negative quantity ${v}`);
  return `0x${v.toString(16)}`;
}

/** An amount from a hex quantity of a result. */
export function fromHex(quantity: string): bigint {
  return BigInt(quantity);
}
