/**
 * The client's declarations against the node's: the checked-in params types are what the RPC
 * schemas generate today, and every method the permission table knows is in the client, the
 * server's own `rpc.discover` aside (results: results-gen.test.ts).
 */
import fs from 'node:fs';
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { z } from 'zod';
import { RPC_METHOD_MODULES, type RpcParams } from '../../src/client/params.gen.ts';
import type { openParams } from '../../src/rpc/modules/channel.ts';
import type {
  newInvoiceParams,
  paymentHashParams,
  settleInvoiceParams,
} from '../../src/rpc/modules/invoice.ts';
import { PERMISSIONS } from '../../src/rpc/permissions.ts';
import { allMethodSpecs, clientParamsSource, PARAMS_FILE, tsType } from '../../tools/gen-client-params.ts';

/** Served by the server itself, not a module: the client reaches it with `request('rpc.discover')`. */
const NOT_IN_CLIENT = ['rpc.discover'];

describe('generated client params', () => {
  it('is current: regenerate with `npm run gen:client`', () => {
    expect(fs.readFileSync(PARAMS_FILE, 'utf8')).toBe(clientParamsSource());
  });

  it('lists every served method with its module, once', () => {
    const specs = allMethodSpecs();
    expect(new Set(specs.map((s) => s.name)).size).toBe(specs.length);
    expect(RPC_METHOD_MODULES).toEqual(Object.fromEntries(specs.map((s) => [s.name, s.module])));
  });

  it('covers the permission table', () => {
    const missing = Object.keys(PERMISSIONS).filter((m) => !(m in RPC_METHOD_MODULES));
    expect(missing.sort()).toEqual([...NOT_IN_CLIENT].sort());
  });
});

describe('JSON Schema to TypeScript', () => {
  it('writes optional fields, nullable unions, records, tuples and the named string formats', () => {
    const t = tsType({
      type: 'object',
      properties: {
        amount: { type: 'string', pattern: '^0x(0|[1-9a-fA-F][0-9a-fA-F]*)$' },
        note: { anyOf: [{ type: 'string' }, { type: 'null' }] },
        records: { type: 'object', propertyNames: {}, additionalProperties: { type: 'string' } } as never,
        hops: { type: 'array', items: { anyOf: [{ type: 'string' }, { type: 'integer' }] } },
        pair: { type: 'array', prefixItems: [{ type: 'number' }, { type: 'boolean' }] },
        kind: { type: 'string', enum: ["it's", 'b'] },
      },
      required: ['amount'],
    });
    expect(t).toBe(
      [
        '{',
        '  amount: HexQuantity;',
        '  note?: string | null;',
        '  records?: Record<string, string>;',
        '  hops?: (string | number)[];',
        '  pair?: [number, boolean];',
        "  kind?: 'it\\'s' | 'b';",
        '}',
      ].join('\n'),
    );
  });
});

describe('generated types against zod', () => {
  it('equal z.input of the exported params schemas', () => {
    expectTypeOf<RpcParams['open_channel']>().toEqualTypeOf<z.input<typeof openParams>>();
    expectTypeOf<RpcParams['new_invoice']>().toEqualTypeOf<z.input<typeof newInvoiceParams>>();
    expectTypeOf<RpcParams['get_invoice']>().toEqualTypeOf<z.input<typeof paymentHashParams>>();
    expectTypeOf<RpcParams['settle_invoice']>().toEqualTypeOf<z.input<typeof settleInvoiceParams>>();
  });
});
