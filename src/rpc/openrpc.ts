/**
 * The OpenRPC 1.3 document of a set of MethodSpecs: params and result schemas converted from zod
 * to JSON Schema (draft-07, what OpenRPC 1.3 speaks), the errors every method can answer, the
 * descriptions and examples. `rpc.discover` serves it for the enabled modules; `npm run docs:rpc`
 * writes it for every module to docs/openrpc.json, and docs/rpc.md from it.
 */
import { z } from 'zod';
import { ERR } from './dispatch.ts';
import { paramDoc, resultDoc } from './field-docs.ts';
import { type MethodSpec, MODULE_NAMES, method } from './method.ts';

export const OPENRPC_VERSION = '1.3.2';

/** Output names the RPC writes: the seed's (default) or fnn v0.8's (`rpc.compat: fnn-0.8`). */
export type RpcCompat = 'seed' | 'fnn-0.8';

export interface OpenRpcOptions {
  version: string;
  compat?: RpcCompat;
}

type Json = Record<string, unknown>;

/** The errors a method can answer; each method lists them by reference. */
export const ERRORS = {
  InvalidParams: {
    code: ERR.INVALID_PARAMS,
    message: 'Invalid params',
    data: 'The message names the field and what was expected; nothing was changed.',
  },
  Refused: {
    code: ERR.DOMAIN,
    message: 'Refused',
    data: 'The node refused the call (fnn\'s error texts), or could not store it (`storage failure: …`). `error.data` echoes the params where fnn does; otherwise it names the refusal\'s code, `{ "error_code": "TlcNotFound" }` (the list below).',
  },
  Unauthorized: {
    code: ERR.UNAUTHORIZED,
    message: 'Unauthorized',
    data: 'Auth is on and the bearer token is missing, invalid, revoked, or lacks the permission.',
  },
} as const;

const MODULE_DESCRIPTIONS: Record<string, string> = {
  info: 'The node itself.',
  peer: 'P2P connections.',
  channel: 'Opening, listing, updating and closing channels.',
  payment: 'Sending payments and reading their outcome.',
  invoice: 'Creating, decoding and settling invoices.',
  graph: 'The gossiped network graph.',
  cch: 'Cross-chain hub: swaps between Fiber (wrapped BTC) and Lightning through LND (with the `cch` service).',
  watchtower: 'Feeding a watchtower with another node\'s channel data (`node("…")` token identity).',
  admin: 'Node administration (Strand; off by default).',
  pubsub: 'WebSocket subscriptions (off by default).',
  dev: 'Debugging helpers that drive channels by hand (off by default).',
  prof: 'Profiling (off by default).',
};

/** zod → JSON Schema draft-07, without the `$schema` key (schemas inside a document). */
export function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Json {
  const out = z.toJSONSchema(schema, { io, target: 'draft-7', unrepresentable: 'any' }) as Json;
  delete out.$schema;
  return out;
}

/** Whether the params object may be left out (`[]`): every field is optional. */
function paramsOptional(schema: z.ZodType): boolean {
  return schema.safeParse({}).success;
}

function methodObject(spec: MethodSpec): Json {
  const params: Json[] = [];
  if (spec.positional) {
    // The one positional method (`unsubscribe_store_changes`) takes a subscription id.
    const items = (jsonSchema(spec.positional, 'input').prefixItems ??
      jsonSchema(spec.positional, 'input').items) as Json[] | Json;
    const list = Array.isArray(items) ? items : [items];
    list.forEach((schema, i) => {
      params.push({ name: i === 0 ? 'subscription_id' : `arg${i}`, required: true, schema });
    });
  } else if (spec.params) {
    const schema = jsonSchema(spec.params, 'input');
    for (const [field, prop] of Object.entries((schema.properties ?? {}) as Record<string, Json>)) {
      const doc = paramDoc(spec.name, field);
      if (doc && prop.description === undefined) prop.description = doc;
    }
    params.push({
      name: 'params',
      description: 'The params object (`"params": [{…}]`); fields not listed are ignored.',
      required: !paramsOptional(spec.params),
      schema,
    });
  }
  const out: Json = {
    name: spec.name,
    summary: spec.description ? firstSentence(spec.description) : spec.name,
    description: spec.description ?? '',
    tags: [{ name: spec.module }],
    paramStructure: 'by-position',
    params,
    result: {
      name: `${spec.name}_result`,
      schema: spec.result ? describeFields(spec.name, jsonSchema(spec.result, 'output')) : {},
    },
    errors: Object.keys(ERRORS).map((k) => ({ $ref: `#/components/errors/${k}` })),
  };
  if (spec.examples?.length) {
    out.examples = spec.examples.map((ex) => ({
      name: ex.name,
      params: ex.params === undefined ? [] : [{ name: 'params', value: ex.params }],
      result: { name: `${spec.name}_result`, value: ex.result },
    }));
  }
  return out;
}

/** Adds the meaning of each named field of a result schema, at any depth. */
function describeFields(method: string, schema: Json): Json {
  const props = schema.properties as Record<string, Json> | undefined;
  for (const [field, prop] of Object.entries(props ?? {})) {
    const doc = resultDoc(method, field);
    if (doc && prop.description === undefined) prop.description = doc;
  }
  for (const key of ['properties', 'items', 'anyOf', 'additionalProperties']) {
    const inner = schema[key];
    const list = Array.isArray(inner)
      ? inner
      : key === 'properties'
        ? Object.values((inner ?? {}) as Json)
        : [inner];
    for (const s of list) if (s && typeof s === 'object') describeFields(method, s as Json);
  }
  return schema;
}

function firstSentence(text: string): string {
  const m = /^(.+?[.:])(\s|$)/.exec(text);
  return (m ? m[1]! : text).replace(/[.:]$/, '');
}

const moduleRank = (m: string) => MODULE_NAMES.indexOf(m as never);

/** The document for `specs`, methods grouped by module in the order of MODULE_NAMES. */
export function openRpcDocument(specs: MethodSpec[], opts: OpenRpcOptions): Json {
  const sorted = [...specs].sort((a, b) => moduleRank(a.module) - moduleRank(b.module));
  const compat = opts.compat ?? 'seed';
  return {
    openrpc: OPENRPC_VERSION,
    info: {
      title: 'Strand JSON-RPC',
      version: opts.version,
      description:
        'JSON-RPC 2.0 over HTTP POST and WebSocket on one address. Params are one object in an array ' +
        '(`[{…}]`, or `[]` for methods without params); quantities are `0x` hex strings. ' +
        (compat === 'fnn-0.8'
          ? 'Output names as fnn v0.8 writes them (`rpc.compat: fnn-0.8`).'
          : "Output names are the seed's (`CHANNEL_READY`, flags as lists, `peer_id`)."),
      license: { name: 'MIT' },
      'x-compat': compat,
    },
    servers: [{ name: 'default', url: 'http://127.0.0.1:8227' }],
    methods: sorted.map(methodObject),
    components: {
      errors: ERRORS,
      tags: Object.fromEntries(
        [...new Set(sorted.map((s) => s.module))].map((m) => [
          m,
          { name: m, description: MODULE_DESCRIPTIONS[m] ?? m },
        ]),
      ),
    },
  };
}

/** What `rpc.discover` answers: an object whose keys the test validates with the meta-schema. */
const documentResult = z.looseObject({
  openrpc: z.string(),
  info: z.looseObject({ title: z.string(), version: z.string() }),
  methods: z.array(z.looseObject({ name: z.string() })),
});

/**
 * `rpc.discover`: the document of the methods this node serves (built once, on first call).
 * `served` is read lazily so that the method can describe itself too.
 */
export function discoverMethod(served: () => MethodSpec[], opts: OpenRpcOptions): MethodSpec {
  let doc: Json | undefined;
  return method({
    name: 'rpc.discover',
    module: 'info',
    params: null,
    description:
      'The OpenRPC 1.3 document of the methods this node serves (its enabled modules): params, results, errors, examples.',
    result: documentResult,
    handler: () => {
      doc ??= openRpcDocument(served(), opts);
      return doc;
    },
  });
}
