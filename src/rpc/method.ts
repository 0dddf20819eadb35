/**
 * How an RPC method is declared. Each module file under `rpc/modules/` exports a function that
 * takes the services it needs and returns its MethodSpecs; the server registers the specs of the
 * enabled modules only. Permissions are NOT declared here: they live in one table
 * (`permissions.ts`) so that every method, present or future, is guarded by the same rules.
 */
import type { z } from 'zod';

/** The seed's defaults (watchtower is built in, so it is on by default as in fnn v0.8). */
const DEFAULTS = ['info', 'peer', 'channel', 'payment', 'invoice', 'graph', 'cch', 'watchtower'] as const;

export const MODULE_NAMES = [...DEFAULTS, 'admin', 'pubsub', 'dev', 'prof'] as const;
export type ModuleName = (typeof MODULE_NAMES)[number];

export const DEFAULT_MODULES: ModuleName[] = [...DEFAULTS];

export interface CallContext {
  /**
   * Caller identity from the verified token (`node("<peer id>")` fact), present only when auth is
   * on and the token carries one. Watchtower-style methods receive it as their first param.
   */
  callerNodeId?: string;
  /** Transport the call arrived on; WebSocket-only methods check this. */
  transport: 'http' | 'ws';
  /** For WebSocket calls: the connection, to push notifications on. */
  connection?: RpcConnection;
}

export interface RpcConnection {
  readonly id: number;
  notify(method: string, params: unknown): void;
  onClose(fn: () => void): void;
}

export interface MethodSpec<S extends z.ZodType = z.ZodType> {
  name: string;
  module: ModuleName;
  /**
   * Schema of the single params object (`params: [ {...} ]`), or `null` for methods that take no
   * argument (`params: []`). Unknown keys are ignored, as the reference does.
   */
  params: S | null;
  /**
   * For the rare method whose params are positional values rather than one object (WebSocket
   * `unsubscribe_store_changes` takes `[<subscription id>]`): validates the whole array instead,
   * and `params` must be null.
   */
  positional?: z.ZodType;
  /** What the method does, in a sentence or two (the OpenRPC document and docs/rpc.md show it). */
  description?: string;
  /**
   * Shape of the JSON result as the method writes it (hex strings, not bigints). The OpenRPC
   * document publishes it and a process test checks real answers against it.
   */
  result?: z.ZodType;
  /** Example calls for the document: `params` is the single params object (absent: `[]`). */
  examples?: MethodExample[];
  handler(params: z.output<S>, ctx: CallContext): unknown | Promise<unknown>;
}

export interface MethodExample {
  name: string;
  params?: Record<string, unknown>;
  result: unknown;
}

/** Helper that keeps the params type of a spec inferred from its schema. */
export function method<S extends z.ZodType>(spec: MethodSpec<S>): MethodSpec {
  return spec as unknown as MethodSpec;
}
