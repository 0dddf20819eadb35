/**
 * Writes `src/client/params.gen.ts`: the params type of every RPC method, derived from the zod
 * schemas the server validates with (the input side, `io: 'input'`: what a caller sends, before
 * the schemas' transforms). The module factories keep their schemas inside, so each is built
 * with stand-in services that are never called (building a spec list only reads the schemas).
 * `npm run gen:client` rewrites the file; a test fails when it is stale.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import type { MethodSpec } from '../src/rpc/method.ts';
import { adminMethods } from '../src/rpc/modules/admin.ts';
import { cchMethods } from '../src/rpc/modules/cch.ts';
import { channelMethods } from '../src/rpc/modules/channel.ts';
import { channelExternalFundingMethods } from '../src/rpc/modules/channel-external.ts';
import { devMethods } from '../src/rpc/modules/dev.ts';
import { externalFundingMethods } from '../src/rpc/modules/dev-funding.ts';
import { graphMethods } from '../src/rpc/modules/graph.ts';
import { infoMethods } from '../src/rpc/modules/info.ts';
import { invoiceMethods } from '../src/rpc/modules/invoice.ts';
import { paymentMethods } from '../src/rpc/modules/payment.ts';
import { peerMethods } from '../src/rpc/modules/peer.ts';
import { profMethods } from '../src/rpc/modules/prof.ts';
import { pubsubMethods } from '../src/rpc/modules/pubsub.ts';
import { watchtowerMethods } from '../src/rpc/modules/watchtower.ts';

export const PARAMS_FILE = path.join(import.meta.dirname, '../src/client/params.gen.ts');

/** A service stand-in: any property is itself, any call returns itself. Handlers never run. */
// biome-ignore lint/suspicious/noExplicitAny: it stands in for every service interface
const stub: any = new Proxy(() => {}, {
  get: (_t, p) => (p === 'then' ? undefined : stub),
  apply: () => stub,
  construct: () => stub,
});

/** Every method spec of every module, as `node/node.ts` assembles them. */
export function allMethodSpecs(): MethodSpec[] {
  return [
    infoMethods(stub),
    peerMethods(stub),
    channelMethods(stub, stub),
    channelExternalFundingMethods(stub),
    paymentMethods(stub, stub),
    invoiceMethods(stub),
    graphMethods(stub),
    watchtowerMethods(stub),
    devMethods(stub),
    externalFundingMethods(stub),
    adminMethods(stub),
    profMethods('unused'),
    pubsubMethods(stub),
    cchMethods(stub),
  ].flat();
}

/** String formats of `rpc/schema.ts`, named in the generated types so hovers say what is expected. */
const STRING_ALIASES: Record<string, string> = {
  '^0x(0|[1-9a-fA-F][0-9a-fA-F]*)$': 'HexQuantity',
  '^(0x)?[0-9a-fA-F]{64}$': 'Hash256',
  '^(0x)?0[23][0-9a-fA-F]{64}$': 'Pubkey',
  '^0x([0-9a-fA-F]{2})*$': 'HexBytes',
};

export interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema | false;
  prefixItems?: JsonSchema[];
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  enum?: unknown[];
  const?: unknown;
  pattern?: string;
  $ref?: string;
}

const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** The type name a `$ref` stands for (gen-client-results.ts names its `$defs`). */
export type RefName = (ref: string) => string;

const noRefs: RefName = (ref) => {
  throw new Error(`unexpected $ref ${ref}`);
};

/**
 * The TypeScript type of a JSON Schema, for the subset zod's toJSONSchema writes for these params
 * and results; `refName` names what a `$ref` points to.
 */
export function tsType(s: JsonSchema, indent = '', refName: RefName = noRefs): string {
  const t = (x: JsonSchema) => tsType(x, indent, refName);
  if (s.$ref) return refName(s.$ref);
  if (s.anyOf || s.oneOf) return (s.anyOf ?? s.oneOf)!.map((x) => t(x)).join(' | ');
  if (s.const !== undefined) return literal(s.const);
  if (s.enum) return s.enum.map(literal).join(' | ');
  if (Array.isArray(s.type)) return s.type.map((type) => t({ ...s, type })).join(' | ');
  switch (s.type) {
    case 'string':
      return (s.pattern && STRING_ALIASES[s.pattern]) ?? 'string';
    case 'integer':
    case 'number':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'null':
      return 'null';
    case 'array':
      if (s.prefixItems) return `[${s.prefixItems.map((x) => t(x)).join(', ')}]`;
      return s.items ? `${wrap(t(s.items))}[]` : 'unknown[]';
    case 'object':
      return objectType(s, indent, refName);
    default:
      return 'unknown';
  }
}

/** A literal type in the house quote style (single quotes). */
function literal(v: unknown): string {
  return typeof v === 'string' ? `'${v.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'` : JSON.stringify(v);
}

/** `t` in parentheses when it is a union at its top level, so that `[]` applies to the whole. */
function wrap(t: string): string {
  let depth = 0;
  for (const c of t) {
    if ('{[(<'.includes(c)) depth++;
    else if ('}])>'.includes(c)) depth--;
    else if (c === '|' && depth === 0) return `(${t})`;
  }
  return t;
}

function objectType(s: JsonSchema, indent: string, refName: RefName): string {
  const props = Object.entries(s.properties ?? {});
  const extra = s.additionalProperties;
  if (props.length === 0) {
    if (extra && typeof extra === 'object') return `Record<string, ${tsType(extra, indent, refName)}>`;
    return 'Record<string, never>';
  }
  const inner = `${indent}  `;
  const required = new Set(s.required ?? []);
  const lines = props.map(([key, v]) => {
    const name = IDENT.test(key) ? key : literal(key);
    return `${inner}${name}${required.has(key) ? '' : '?'}: ${tsType(v, inner, refName)};`;
  });
  return `{\n${lines.join('\n')}\n${indent}}`;
}

/** `source` laid out by the repository's formatter, so the checked-in `file` passes `biome check`. */
export function formatted(source: string, file = PARAMS_FILE): string {
  const biome = path.join(import.meta.dirname, '../node_modules/@biomejs/biome/bin/biome');
  const r = spawnSync(process.execPath, [biome, 'format', `--stdin-file-path=${file}`], {
    input: source,
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`biome format failed: ${r.stderr}`);
  return r.stdout;
}

/** The whole generated file, formatted. */
export function clientParamsSource(): string {
  return formatted(rawParamsSource());
}

function rawParamsSource(): string {
  const specs = allMethodSpecs().sort((a, b) => a.name.localeCompare(b.name));
  const entries = specs.map((m) => {
    const schema = m.params ?? m.positional;
    const type = schema
      ? tsType(z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonSchema, '  ')
      : 'undefined';
    return `  ${m.name}: ${type};`;
  });
  const modules = specs.map((m) => `  ${m.name}: '${m.module}',`);
  return `${[
    '// Generated by tools/gen-client-params.ts from the RPC schemas (src/rpc/modules/*.ts): do not edit.',
    '// Regenerate with `npm run gen:client`.',
    '',
    '/** A hex quantity: `0x` and hex digits without leading zeros (`0x0`, `0x5f5e100`). */',
    'export type HexQuantity = string;',
    '/** A 32-byte hash in hex, `0x` optional. */',
    'export type Hash256 = string;',
    '/** A 33-byte compressed secp256k1 public key in hex, `0x` optional. */',
    'export type Pubkey = string;',
    '/** `0x`-prefixed hex bytes (`0x` alone is empty). */',
    'export type HexBytes = string;',
    '',
    '/** Params of each method: the single params object, `undefined` for none, or a positional tuple. */',
    'export interface RpcParams {',
    ...entries,
    '}',
    '',
    '/** The RPC module that serves each method (`rpc.enabled_modules`). */',
    'export const RPC_METHOD_MODULES = {',
    ...modules,
    '} as const;',
    '',
    'export type RpcMethod = keyof RpcParams;',
  ].join('\n')}\n`;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  fs.writeFileSync(PARAMS_FILE, clientParamsSource());
  console.log(`wrote ${path.relative(process.cwd(), PARAMS_FILE)}`);
}
