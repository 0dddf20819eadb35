/**
 * Generated JSON-RPC traffic for the RPC fuzz: requests to every method with params built from
 * that method's own schema keys (plus typos), values of every JSON kind biased towards the edges
 * (hex quantities past their type, negative and huge numbers, long strings, deep nesting), and
 * malformed envelopes, batches and bodies.
 */
import fc from 'fast-check';
import { z } from 'zod';
import { VERSION } from '../../src/node/build-info.ts';
import { catalogMethods } from '../../src/rpc/catalog.ts';

/** Every method's name and top-level param keys, read from the real specs (handlers never run). */
export function methodCatalogue(): { name: string; keys: string[] }[] {
  // rpc.discover included: the fuzz must not be able to break the document either.
  const specs = catalogMethods(VERSION);
  return specs.map((s) => ({
    name: s.name,
    keys: s.params instanceof z.ZodObject ? Object.keys(s.params.shape) : [],
  }));
}

const big = (bits: bigint) => `0x${((1n << bits) - 1n).toString(16)}`;
const HEX_EDGES = [
  '0x',
  '0x0',
  '0x00',
  '0x1',
  '0x01',
  '0x-1',
  '-0x1',
  '0xg',
  big(32n),
  big(64n),
  `0x1${'0'.repeat(16)}`,
  big(128n),
  `0x1${'0'.repeat(32)}`,
  big(256n),
  `0x${'ab'.repeat(32)}`,
  `0x${'ab'.repeat(36)}`,
  `02${'11'.repeat(32)}`,
  `0x03${'22'.repeat(32)}`,
  'QmaQSn11jsAXWLhjHtZ9EVbauD88sCmYzty3GmYcoVWP2j',
  'ckt1qzda0cr08m85hc8jlnfp3zer7xulejywt49kt2rr0vthywaa50xwsqgx7g4s3',
  'ckt1q',
  '/ip4/127.0.0.1/tcp/1',
  'Fibd',
  'Fibb',
  'sha256',
  'ckb_hash',
  'Created',
  'code',
  'dep_group',
];

const hexish = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...HEX_EDGES) },
  {
    weight: 2,
    arbitrary: fc
      .bigInt({ min: -(1n << 300n), max: 1n << 300n })
      .map((v) => (v < 0n ? `-0x${(-v).toString(16)}` : `0x${v.toString(16)}`)),
  },
  { weight: 2, arbitrary: fc.string({ maxLength: 80 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(2_000, 70_000, 1 << 20).map((n) => 'Q'.repeat(n)),
  },
);

const numberish = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.constantFrom(-1, 0, 2 ** 53, 2 ** 64, -(2 ** 63), 1e308, Number.MAX_SAFE_INTEGER + 2),
);

const scriptish = fc.record(
  {
    code_hash: hexish,
    hash_type: fc.constantFrom('type', 'data', 'data1', 'data2', 'bogus', ''),
    args: hexish,
  },
  { requiredKeys: [] },
);

/** Nested arrays or objects up to 3,000 deep (deeper ones go as raw text: `bodies`). */
const deep = fc.tuple(fc.integer({ min: 10, max: 3_000 }), fc.boolean()).map(([depth, arrays]) => {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = arrays ? [v] : { a: v };
  return v;
});

export const jsonValue: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  v: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    hexish,
    numberish,
    fc.boolean(),
    fc.constant(null),
    scriptish,
    fc.array(tie('v'), { maxLength: 4 }),
    fc.dictionary(fc.string({ maxLength: 12 }), tie('v'), { maxKeys: 4 }),
  ),
})).v;

const value = fc.oneof({ weight: 12, arbitrary: jsonValue }, { weight: 1, arbitrary: deep });

/**
 * Backup destinations the fuzz may send: never a place a backup could really be written to.
 * `occupied` is a non-empty directory (refused), the others are refused by the path check.
 */
function pathValues(occupied: string) {
  return fc.oneof(
    fc.constantFrom('/proc/self/x', '/proc/1/fd/x', '/sys/x', '/dev/x', '/dev/null/x', '', '/', occupied),
    fc.string({ maxLength: 60 }).map((s) => `relative/${s}`),
    fc.string({ maxLength: 60 }).map((s) => `/proc/${s}`),
    fc.constantFrom(5_000, 100_000).map((n) => `/${'p'.repeat(n)}`),
  );
}

const quantity = fc.oneof(
  { weight: 4, arbitrary: fc.bigInt({ min: 0n, max: 1n << 40n }).map((v) => `0x${v.toString(16)}`) },
  { weight: 1, arbitrary: fc.bigInt({ min: 0n, max: 1n << 130n }).map((v) => `0x${v.toString(16)}`) },
  { weight: 2, arbitrary: fc.constantFrom('0x0', '0x1', '0x3e8', '0x174876e800', big(64n), big(128n)) },
);
const hash = fc.constantFrom(`0x${'ab'.repeat(32)}`, `0x${'00'.repeat(32)}`, `0x${'cd'.repeat(32)}`);
const pubkeyHex = fc.constantFrom(`02${'11'.repeat(32)}`, `03${'5a'.repeat(32)}`, `0x02${'79'.repeat(32)}`);

/** Values of the right kind for a field, by its name, so that calls get past the schema. */
function typical(key: string): fc.Arbitrary<unknown> {
  if (/script/.test(key))
    return fc.oneof(
      {
        weight: 3,
        arbitrary: fc.record({
          code_hash: hash,
          hash_type: fc.constantFrom('type', 'data1'),
          args: fc.constantFrom('0x', '0x00'),
        }),
      },
      { weight: 1, arbitrary: scriptish },
    );
  if (/(^|_)(id|hash|preimage|after)$|^payment_|^temporary_/.test(key)) return hash;
  if (/pubkey|^target|peer_id/.test(key)) return pubkeyHex;
  if (key === 'currency') return fc.constantFrom('Fibd', 'Fibt', 'Fibb', 'fibd');
  if (key === 'hash_algorithm') return fc.constantFrom('sha256', 'ckb_hash', 'md5');
  if (key === 'status') return fc.constantFrom('Created', 'Inflight', 'Success', 'Failed', 'Nope');
  if (/^(public|one_way|keysend|force|enabled|dry_run|allow_|save|include_|only_)/.test(key))
    return fc.boolean();
  if (/address|invoice|description/.test(key)) return hexish;
  return quantity;
}

function paramsObject(keys: string[], occupied: string): fc.Arbitrary<Record<string, unknown>> {
  const pool = [...keys, 'ammount', 'peer', '__proto__', 'constructor', 'toString'];
  const entry = fc
    .constantFrom(...pool)
    .chain((k) =>
      fc.tuple(
        fc.constant(k),
        fc.oneof({ weight: 4, arbitrary: typical(k) }, { weight: 1, arbitrary: value }),
      ),
    );
  const required = fc.tuple(...keys.map((k) => fc.tuple(fc.constant(k), typical(k))));
  return fc
    .tuple(fc.boolean(), required, fc.uniqueArray(entry, { maxLength: 3, selector: ([k]) => k }))
    .map(([full, all, some]) => (full ? [...all, ...some] : some))
    .map((list) => [...new Map(list as [string, unknown][]).entries()])
    .chain((entries) =>
      fc.constant(entries).map((list) => {
        const obj: Record<string, unknown> = {};
        for (const [k, v] of list)
          Object.defineProperty(obj, k, { value: v, enumerable: true, writable: true });
        return obj;
      }),
    )
    .chain((obj) =>
      'path' in obj ? pathValues(occupied).map((path) => ({ ...obj, path })) : fc.constant(obj),
    );
}

/** A request to one of `methods`, its params shaped by the method's keys, sometimes malformed. */
function request(methods: { name: string; keys: string[] }[], occupied: string) {
  const m = fc.constantFrom(...methods);
  const params = m.chain((x) =>
    fc
      .oneof(
        { weight: 10, arbitrary: paramsObject(x.keys, occupied).map((p) => [p]) },
        { weight: 1, arbitrary: fc.constant([]) },
        { weight: 1, arbitrary: paramsObject(x.keys, occupied) },
        { weight: 1, arbitrary: fc.tuple(paramsObject(x.keys, occupied), jsonValue) },
        { weight: 1, arbitrary: jsonValue },
      )
      .map((p) => ({ method: x.name, params: p })),
  );
  const id = fc.oneof(
    { weight: 8, arbitrary: fc.integer({ min: 1, max: 1e9 }) },
    { weight: 1, arbitrary: fc.string({ maxLength: 10 }) },
    { weight: 1, arbitrary: jsonValue },
  );
  const method = fc.oneof(
    { weight: 20, arbitrary: fc.constant(undefined) },
    {
      weight: 1,
      arbitrary: fc.oneof(
        fc.constantFrom('', 'constructor', '__proto__', 'toString', 'hasOwnProperty', 'NODE_INFO'),
        fc.string({ maxLength: 20 }),
        jsonValue,
      ),
    },
  );
  const version = fc.oneof(
    { weight: 20, arbitrary: fc.constant('2.0') },
    { weight: 1, arbitrary: jsonValue },
  );
  return fc
    .record({ call: params, id, method, version, dropId: fc.boolean(), dropParams: fc.nat(20) })
    .map(({ call, id, method, version, dropId, dropParams }) => {
      const r: Record<string, unknown> = { jsonrpc: version, method: method ?? call.method };
      if (!dropId || r.method === call.method) r.id = id;
      if (dropParams > 0) r.params = call.params;
      return r;
    });
}

/** One HTTP body: mostly a request, sometimes a batch, broken JSON or a deep or huge document. */
export function bodies(methods: { name: string; keys: string[] }[], occupied: string): fc.Arbitrary<string> {
  const one = request(methods, occupied);
  return fc.oneof(
    { weight: 30, arbitrary: one.map((r) => JSON.stringify(r)) },
    { weight: 3, arbitrary: fc.array(one, { minLength: 0, maxLength: 5 }).map((b) => JSON.stringify(b)) },
    { weight: 1, arbitrary: jsonValue.map((v) => JSON.stringify(v) ?? 'null') },
    { weight: 1, arbitrary: fc.string({ maxLength: 200 }) },
    {
      weight: 1,
      arbitrary: one.chain((r) =>
        fc.nat().map((cut) => {
          const s = JSON.stringify(r);
          return s.slice(0, cut % (s.length + 1));
        }),
      ),
    },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        '['.repeat(100_000),
        `{"jsonrpc":"2.0","id":1,"method":"node_info","params":${'['.repeat(50_000)}${']'.repeat(50_000)}}`,
        `{"jsonrpc":"2.0","id":${'9'.repeat(5000)},"method":"node_info"}`,
        '{"jsonrpc":"2.0","id":1e999,"method":"node_info"}',
        `{"jsonrpc":"2.0","id":1,"method":"list_payments","params":[{"limit":-${'9'.repeat(400)}}]}`,
      ),
    },
  );
}
