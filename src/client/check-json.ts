/**
 * A small JSON Schema checker for the subset that zod's toJSONSchema writes for the RPC results
 * (`result-schemas.gen.ts`): `$ref` into a set of defs, `anyOf`/`oneOf`, `const`, `enum`, `type`,
 * `pattern`, `minimum`/`maximum`, `properties`/`required`/`additionalProperties`, `propertyNames`,
 * `items`/`prefixItems`. It lets `strand/client/results` check replies without loading zod or a
 * validator package. A keyword outside `CHECKED_KEYWORDS` is refused by the generator's test
 * rather than ignored here.
 */

export interface JsonSchema {
  $ref?: string;
  anyOf?: readonly JsonSchema[];
  oneOf?: readonly JsonSchema[];
  const?: unknown;
  enum?: readonly unknown[];
  type?: string | readonly string[];
  pattern?: string;
  minimum?: number;
  maximum?: number;
  properties?: Readonly<Record<string, JsonSchema>>;
  required?: readonly string[];
  additionalProperties?: boolean | JsonSchema;
  propertyNames?: JsonSchema;
  items?: JsonSchema | false;
  prefixItems?: readonly JsonSchema[];
  description?: string;
}

/** The keywords `checkJson` reads (`description` is documentation only). */
export const CHECKED_KEYWORDS = [
  '$ref',
  'anyOf',
  'oneOf',
  'const',
  'enum',
  'type',
  'pattern',
  'minimum',
  'maximum',
  'properties',
  'required',
  'additionalProperties',
  'propertyNames',
  'items',
  'prefixItems',
  'description',
] as const;

type Defs = Readonly<Record<string, JsonSchema>>;

const patterns = new Map<string, RegExp>();

function typeOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v;
}

function hasType(v: unknown, type: string): boolean {
  if (type === 'integer') return Number.isInteger(v);
  return typeOf(v) === type;
}

/**
 * Where `value` first departs from `schema`, as `path: what was expected`; `undefined` when it
 * matches. `$ref`s are `#/$defs/<name>`, looked up in `defs`.
 */
export function checkJson(schema: JsonSchema, value: unknown, defs: Defs, at = '$'): string | undefined {
  if (schema.$ref) {
    const def = defs[schema.$ref.replace('#/$defs/', '')];
    if (!def) return `${at}: unknown schema ${schema.$ref}`;
    return checkJson(def, value, defs, at);
  }
  const union = schema.anyOf ?? schema.oneOf;
  if (union) {
    const misses = union.map((s) => checkJson(s, value, defs, at));
    const matches = misses.filter((m) => m === undefined).length;
    if (schema.oneOf ? matches === 1 : matches > 0) return undefined;
    return matches > 1
      ? `${at}: matches more than one of oneOf`
      : `${at}: matches none of (${misses.join('; ')})`;
  }
  if ('const' in schema && value !== schema.const) return `${at}: expected ${JSON.stringify(schema.const)}`;
  if (schema.enum && !schema.enum.includes(value)) {
    return `${at}: expected one of ${schema.enum.map((e) => JSON.stringify(e)).join(', ')}`;
  }
  if (schema.type !== undefined) {
    const types = typeof schema.type === 'string' ? [schema.type] : schema.type;
    if (!types.some((t) => hasType(value, t)))
      return `${at}: expected ${types.join(' or ')}, got ${typeOf(value)}`;
  }
  if (typeof value === 'string' && schema.pattern !== undefined) {
    let re = patterns.get(schema.pattern);
    if (!re) {
      re = new RegExp(schema.pattern);
      patterns.set(schema.pattern, re);
    }
    if (!re.test(value)) return `${at}: expected a string matching ${schema.pattern}`;
  }
  if (typeof value === 'number') {
    if (schema.minimum !== undefined && value < schema.minimum)
      return `${at}: expected at least ${schema.minimum}`;
    if (schema.maximum !== undefined && value > schema.maximum)
      return `${at}: expected at most ${schema.maximum}`;
  }
  if (Array.isArray(value)) return checkArray(schema, value, defs, at);
  if (typeOf(value) === 'object') return checkObject(schema, value as Record<string, unknown>, defs, at);
  return undefined;
}

function checkArray(schema: JsonSchema, value: unknown[], defs: Defs, at: string): string | undefined {
  const prefix = schema.prefixItems ?? [];
  for (let i = 0; i < value.length; i++) {
    const item = i < prefix.length ? prefix[i] : schema.items;
    if (item === false) return `${at}: expected at most ${prefix.length} items`;
    const miss = item && checkJson(item, value[i], defs, `${at}[${i}]`);
    if (miss) return miss;
  }
  if (value.length < prefix.length) return `${at}: expected ${prefix.length} items`;
  return undefined;
}

function checkObject(
  schema: JsonSchema,
  value: Record<string, unknown>,
  defs: Defs,
  at: string,
): string | undefined {
  for (const key of schema.required ?? []) if (!Object.hasOwn(value, key)) return `${at}.${key}: missing`;
  const props = schema.properties ?? {};
  for (const [key, v] of Object.entries(value)) {
    const where = `${at}.${key}`;
    if (schema.propertyNames) {
      const miss = checkJson(schema.propertyNames, key, defs, `${where} (name)`);
      if (miss) return miss;
    }
    const prop = Object.hasOwn(props, key) ? props[key] : schema.additionalProperties;
    if (prop === false) return `${where}: not a field of this result`;
    const miss = prop && prop !== true ? checkJson(prop, v, defs, where) : undefined;
    if (miss) return miss;
  }
  return undefined;
}
