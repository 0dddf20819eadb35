/**
 * `npm run docs:rpc`: writes docs/openrpc.json (the OpenRPC document of every module) and
 * docs/rpc.md (the method reference) from the MethodSpecs. `test/tools/docs-rpc.test.ts` fails
 * when either checked-in file differs from what this writes.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { VERSION } from '../src/node/build-info.ts';
import { catalogMethods } from '../src/rpc/catalog.ts';
import { COMPAT_METHODS } from '../src/rpc/compat.ts';
import { ERROR_CODES_BY_DOMAIN, jsonRpcCodeOf } from '../src/rpc/error-codes.ts';
import { ERRORS, openRpcDocument } from '../src/rpc/openrpc.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const OPENRPC_JSON = path.join(ROOT, 'docs/openrpc.json');
export const RPC_MD = path.join(ROOT, 'docs/rpc.md');

type Schema = Record<string, unknown>;

/** Names for the string patterns of `rpc/schema.ts` and `rpc/results.ts`. */
const PATTERNS: [RegExp, string][] = [
  [/^\^0x\(0\|\[1-9a-f/, 'hex quantity'],
  [/^\^\(0x\)\?0\[23\]|^\^0\[23\]/, 'pubkey'],
  [/\{64\}\$$/, 'H256'],
  [/\{72\}\$$/, 'OutPointHex'],
  [/^\^Qm/, 'peer id (Qm…)'],
  [/^\^0x\(\[0-9a-f/, 'hex bytes'],
];

function typeName(s: Schema): string {
  if (s.anyOf || s.oneOf) {
    const parts = ((s.anyOf ?? s.oneOf) as Schema[]).map(typeName);
    return [...new Set(parts)].join(' \\| ');
  }
  if (Array.isArray(s.type)) return s.type.map((t) => typeName({ ...s, type: t })).join(' \\| ');
  if (s.const !== undefined) return `\`${JSON.stringify(s.const)}\``;
  if (s.enum) return (s.enum as unknown[]).map((v) => `\`${String(v)}\``).join(', ');
  if (s.type === 'array') return `${typeName((s.items ?? {}) as Schema)}[]`;
  if (s.type === 'string' && typeof s.pattern === 'string') {
    const hit = PATTERNS.find(([re]) => re.test(s.pattern as string));
    return hit ? hit[1] : 'string';
  }
  if (s.type === 'object' && s.additionalProperties && !s.properties) {
    return `map of ${typeName(s.additionalProperties as Schema)}`;
  }
  if (s.type === 'null') return 'null';
  return typeof s.type === 'string' ? s.type : 'any';
}

/** One row per field, nested objects as `a.b`, arrays of objects as `a[].b` (3 levels at most). */
function fieldRows(s: Schema, prefix = '', depth = 0): string[] {
  const rows: string[] = [];
  const variants = (s.anyOf as Schema[] | undefined)?.filter((v) => v.type !== 'null') ?? [s];
  const obj = variants.length === 1 ? variants[0]! : s;
  if (obj.type !== 'object' || !obj.properties) return rows;
  const required = new Set((obj.required as string[] | undefined) ?? []);
  for (const [name, raw] of Object.entries(obj.properties as Record<string, Schema>)) {
    const key = `${prefix}${name}`;
    const about = typeof raw.description === 'string' ? raw.description.replaceAll('|', '\\|') : '';
    rows.push(`| \`${key}\` | ${typeName(raw)} | ${required.has(name) ? 'yes' : 'no'} | ${about} |`);
    if (depth >= 2) continue;
    const inner = (raw.anyOf as Schema[] | undefined)?.filter((v) => v.type !== 'null') ?? [raw];
    const one = inner.length === 1 ? inner[0]! : undefined;
    if (one?.type === 'object') rows.push(...fieldRows(one, `${key}.`, depth + 1));
    if (one?.type === 'array' && (one.items as Schema | undefined)?.type === 'object')
      rows.push(...fieldRows(one.items as Schema, `${key}[].`, depth + 1));
  }
  return rows;
}

function table(s: Schema): string {
  const rows = fieldRows(s);
  if (rows.length === 0) return `\`${typeName(s)}\``;
  return ['| field | type | required | meaning |', '|---|---|---|---|', ...rows].join('\n');
}

type MethodObject = {
  name: string;
  description: string;
  tags: { name: string }[];
  params: { name: string; required: boolean; schema: Schema }[];
  result: { schema: Schema };
  examples?: { name: string; params: { value: unknown }[]; result: { value: unknown } }[];
};

function methodSection(m: MethodObject): string {
  const out = [`### \`${m.name}\``, '', m.description, ''];
  if (m.params.length === 0) out.push('**Params:** none (`[]`).', '');
  for (const p of m.params) {
    out.push(
      p.name === 'params'
        ? `**Params:** one object${p.required ? '' : ' (may be left out: `[]` or `[{}]`)'}.`
        : `**Params:** \`${p.name}\` (positional): ${typeName(p.schema)}.`,
      '',
    );
    if (p.name === 'params') out.push(table(p.schema), '');
  }
  out.push('**Result:**', '', table(m.result.schema), '');
  out.push(
    `**Errors:** ${Object.values(ERRORS)
      .map((e) => `${e.code} ${e.message}`)
      .join(', ')}.`,
    '',
  );
  for (const ex of m.examples ?? []) {
    const request = { jsonrpc: '2.0', id: 1, method: m.name, params: ex.params.map((p) => p.value) };
    out.push(
      `**Example** (${ex.name}):`,
      '',
      '```json',
      JSON.stringify(request),
      JSON.stringify({ jsonrpc: '2.0', id: 1, result: ex.result.value }),
      '```',
      '',
    );
  }
  return out.join('\n');
}

export function renderRpcDocs(): { json: string; markdown: string } {
  const doc = openRpcDocument(catalogMethods(VERSION), { version: VERSION });
  const v08 = openRpcDocument(catalogMethods(VERSION, 'fnn-0.8'), { version: VERSION, compat: 'fnn-0.8' });
  const methods = doc.methods as MethodObject[];
  const tags = (doc.components as { tags: Record<string, { description: string }> }).tags;
  const md: string[] = [
    '# Strand JSON-RPC reference',
    '',
    '<!-- Generated by `npm run docs:rpc` from the method specs (src/rpc/modules/*.ts); do not edit. -->',
    '',
    'JSON-RPC 2.0 over HTTP `POST /` and WebSocket on `rpc.listening_addr` (default `127.0.0.1:8227`).',
    'Params are one object in an array (`"params": [{…}]`), or `[]` for methods without params;',
    'integers are `0x` hex quantities (lower case, no leading zeros). The same content as an OpenRPC',
    '1.3 document: [openrpc.json](openrpc.json), and live from a node: `rpc.discover` (its enabled',
    'modules only). `strand rpc --list` and `strand rpc <method> --help` read it too.',
    '',
    'Types: *hex quantity* `0x…` integer; *H256* `0x` + 64 hex; *pubkey* 66 hex chars (output without',
    '`0x`; input with or without); *OutPointHex* `0x` + 72 hex (tx hash ‖ index LE); *hex bytes* `0x…`.',
    '',
    '## Errors',
    '',
    '| code | meaning |',
    '|---|---|',
    ...Object.values(ERRORS).map((e) => `| ${e.code} | ${e.message}: ${e.data} |`),
    '',
    'A method name the node does not serve (unknown, or its module not enabled) is -32601.',
    '',
    '### Refusal codes',
    '',
    "A refusal's `error.data.error_code` (when `error.data` does not echo the params) names it for",
    'programs; the message stays the text fnn answers. One table (`src/rpc/error-codes.ts`) gives the',
    'JSON-RPC code of each, -32000 unless it says otherwise.',
    '',
    '| domain | error_code | code | when |',
    '|---|---|---|---|',
    ...Object.entries(ERROR_CODES_BY_DOMAIN).flatMap(([domain, codes]) =>
      Object.entries(codes).map(
        ([code, when]) =>
          `| ${domain} | \`${code}\` | ${jsonRpcCodeOf(code)} | ${(when as string).replaceAll('|', '\\|')} |`,
      ),
    ),
    '',
  ];
  for (const [module, tag] of Object.entries(tags)) {
    md.push(`## Module \`${module}\``, '', tag.description, '');
    for (const m of methods.filter((x) => x.tags[0]?.name === module)) md.push(methodSection(m));
  }
  md.push(
    '## Output names: `rpc.compat`',
    '',
    "By default results use the seed's names. With `rpc.compat: fnn-0.8` (config file; `RPC_COMPAT`,",
    "`--rpc-compat`) they use fnn v0.8's, so that applications written against fnn work unchanged:",
    '',
    '| | default (`seed`) | `fnn-0.8` |',
    '|---|---|---|',
    '| `state.state_name` | `CHANNEL_READY`, `SHUTTING_DOWN`, … | `ChannelReady`, `ShuttingDown`, … |',
    '| `state.state_flags` | list of names, `[]` when none | one string, names joined by `\\|` (composites such as `INIT_SENT` included when any of their bits is set, as fnn writes them), `""` when none; absent for `ChannelReady`; Strand-only flags left out |',
    '| counterparty in channel records | `peer_id` and `pubkey` | `pubkey` |',
    '| `list_peers` entries | `pubkey`, `peer_id`, `address` | `pubkey`, `address` |',
    '| invoice `attrs` | `Description`, `ExpiryTime` `{secs, nanos}`, … | `description`, `expiry_time` (hex quantity), … |',
    '',
    'Inputs accept both names whatever the setting. The results under `fnn-0.8`:',
    '',
  );
  const v08Methods = v08.methods as MethodObject[];
  for (const name of [...COMPAT_METHODS, 'get_invoice']) {
    const m = v08Methods.find((x) => x.name === name)!;
    md.push(`### \`${name}\` (fnn-0.8)`, '', table(m.result.schema), '');
  }
  return { json: `${JSON.stringify(doc, null, 2)}\n`, markdown: `${md.join('\n').trimEnd()}\n` };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { json, markdown } = renderRpcDocs();
  fs.writeFileSync(OPENRPC_JSON, json);
  fs.writeFileSync(RPC_MD, markdown);
  process.stdout.write(`wrote ${path.relative(ROOT, OPENRPC_JSON)} and ${path.relative(ROOT, RPC_MD)}\n`);
}
