/**
 * A test driver read from an OpenRPC document (what @open-rpc/test-coverage does, without its
 * network fetches): for every method, calls built from its params schema, and each answer checked
 * — a result against the method's result schema, an error against the errors it declares.
 */
import jsonSchemaMeta from '@json-schema-tools/meta-schema';
import * as openrpcMeta from '@open-rpc/meta-schema';
import { Ajv, type ValidateFunction } from 'ajv';

type Schema = Record<string, unknown>;

export interface OpenRpcMethod {
  name: string;
  params: { name: string; required: boolean; schema: Schema }[];
  result: { schema: Schema };
  errors: ({ $ref: string } | { code: number })[];
  examples?: { name: string; params: { value: unknown }[]; result: { value: unknown } }[];
}

export interface OpenRpcDoc {
  methods: OpenRpcMethod[];
  components: { errors: Record<string, { code: number }> };
}

export interface Violation {
  method: string;
  params: unknown[];
  problem: string;
}

export interface CallOutcome {
  method: string;
  params: unknown[];
  kind: 'result' | 'error';
  code?: number;
}

export function newAjv(): Ajv {
  return new Ajv({ strict: false, allErrors: true, validateFormats: false });
}

const strip = (s: object) => {
  const { $schema: _unused, ...rest } = s as Record<string, unknown>;
  return rest;
};

/** The @open-rpc/meta-schema check (both meta-schemas name an unknown `$schema`; plain draft-07). */
export function metaSchemaValidator(): ValidateFunction {
  const ajv = newAjv();
  ajv.addSchema(strip(jsonSchemaMeta), 'https://meta.json-schema.tools');
  // The package's types leave out its one value export, the meta-schema.
  return ajv.compile(strip((openrpcMeta as unknown as { openrpcDocument: object }).openrpcDocument));
}

/** A generator point: a valid compressed public key that is no node's. */
const SAMPLE_PUBKEY = '0279be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798';

/** A value of `schema` (its required fields only), from the patterns of `rpc/schema.ts`. */
export function sample(schema: Schema): unknown {
  const variants = (schema.anyOf ?? schema.oneOf) as Schema[] | undefined;
  if (variants) return sample(variants.find((v) => v.type !== 'null') ?? variants[0]!);
  if (schema.enum) return (schema.enum as unknown[])[0];
  if (schema.const !== undefined) return schema.const;
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
  switch (type) {
    case 'string': {
      // The first candidate the pattern and length limits accept, in the order of the patterns
      // of `rpc/schema.ts`: quantity, pubkey, outpoint, hash, bytes, free text.
      const candidates = ['0x1', SAMPLE_PUBKEY, `0x${'00'.repeat(36)}`, `0x${'ab'.repeat(32)}`, '0x', 'x'];
      const re = schema.pattern ? new RegExp(String(schema.pattern)) : undefined;
      const fits = (c: string) =>
        (!re || re.test(c)) &&
        c.length >= Number(schema.minLength ?? 0) &&
        c.length <= Number(schema.maxLength ?? Infinity);
      return re ? (candidates.find(fits) ?? 'x') : 'x';
    }
    case 'boolean':
      return false;
    case 'integer':
    case 'number':
      return 1;
    case 'array': {
      const prefix = schema.prefixItems as Schema[] | undefined;
      if (prefix) return prefix.map(sample);
      const min = Number(schema.minItems ?? 0);
      return Array.from({ length: min }, () => sample((schema.items ?? {}) as Schema));
    }
    case 'object': {
      const props = (schema.properties ?? {}) as Record<string, Schema>;
      const required = (schema.required ?? []) as string[];
      return Object.fromEntries(required.map((k) => [k, sample(props[k] ?? {})]));
    }
    default:
      return {};
  }
}

/** The params lists the driver sends: `[]`, and one built from the schema (or `overrides`). */
export function callsFor(m: OpenRpcMethod, overrides: Record<string, unknown[]>): unknown[][] {
  const built = overrides[m.name] ?? m.params.map((p) => sample(p.schema));
  const calls: unknown[][] = [[]];
  if (JSON.stringify(built) !== '[]') calls.push(built);
  return calls;
}

/** Checks one answer of `m`; returns what is wrong, or undefined. */
export function checkAnswer(
  doc: OpenRpcDoc,
  m: OpenRpcMethod,
  reply: { result?: unknown; error?: { code: number; message: string } },
  validate: (schema: Schema) => ValidateFunction,
): string | undefined {
  if (reply.error) {
    const declared = m.errors.map((e) =>
      '$ref' in e ? doc.components.errors[e.$ref.split('/').pop()!]!.code : e.code,
    );
    if (!declared.includes(reply.error.code))
      return `undeclared error ${reply.error.code}: ${reply.error.message}`;
    return undefined;
  }
  if (!('result' in reply)) return 'neither result nor error';
  const check = validate(m.result.schema);
  if (!check(reply.result)) return `result off its schema: ${JSON.stringify(check.errors?.slice(0, 3))}`;
  return undefined;
}

/**
 * Calls every method of `doc` through `call` (skipping `skip`), checks every answer, and returns
 * the violations with what was called.
 */
export async function driveDocument(
  doc: OpenRpcDoc,
  call: (
    method: string,
    params: unknown[],
  ) => Promise<{ result?: unknown; error?: { code: number; message: string } }>,
  opts: { overrides?: Record<string, unknown[]>; skip?: string[] } = {},
): Promise<{ violations: Violation[]; outcomes: CallOutcome[] }> {
  const ajv = newAjv();
  const compiled = new Map<Schema, ValidateFunction>();
  const validate = (s: Schema) => {
    const known = compiled.get(s);
    if (known) return known;
    const f = ajv.compile(s);
    compiled.set(s, f);
    return f;
  };
  const violations: Violation[] = [];
  const outcomes: CallOutcome[] = [];
  for (const m of doc.methods) {
    if (opts.skip?.includes(m.name)) continue;
    for (const params of callsFor(m, opts.overrides ?? {})) {
      const reply = await call(m.name, params);
      outcomes.push({
        method: m.name,
        params,
        kind: reply.error ? 'error' : 'result',
        code: reply.error?.code,
      });
      const problem = checkAnswer(doc, m, reply, validate);
      if (problem) violations.push({ method: m.name, params, problem });
    }
  }
  return { violations, outcomes };
}
