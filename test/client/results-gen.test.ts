/**
 * The client's results against the RPC's: the checked-in types and JSON Schema are what
 * `src/rpc/results.ts` and the methods' result schemas generate today, the checker reads every
 * keyword they use, and real answers built by the RPC's zod schemas pass the client's checks.
 */
import fs from 'node:fs';
import { RESULT_SCHEMAS, ResultMismatchError } from 'strand/client/results';
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { z } from 'zod';
import { CHECKED_KEYWORDS } from '../../src/client/check-json.ts';
import { RPC_METHOD_MODULES } from '../../src/client/params.gen.ts';
import type { RpcResults, StoreChange } from '../../src/client/results.gen.ts';
import type * as R from '../../src/rpc/results.ts';
import type { StoreChange as BusChange } from '../../src/store/changes.ts';
import {
  RESULT_SCHEMAS_FILE,
  RESULT_TYPES_FILE,
  resultDefs,
  resultSchemasSource,
  resultTypesSource,
} from '../../tools/gen-client-results.ts';

describe('generated client results', () => {
  it('are current: regenerate with `npm run gen:client`', () => {
    expect(fs.readFileSync(RESULT_TYPES_FILE, 'utf8')).toBe(resultTypesSource());
    expect(fs.readFileSync(RESULT_SCHEMAS_FILE, 'utf8')).toBe(resultSchemasSource());
  });

  it('have a check for every method and none for a method that does not exist', () => {
    expect(Object.keys(RESULT_SCHEMAS).sort()).toEqual(Object.keys(RPC_METHOD_MODULES).sort());
  });

  it('use only keywords the checker reads', () => {
    const used = new Set<string>();
    const walk = (s: unknown): void => {
      if (!s || typeof s !== 'object') return;
      if (Array.isArray(s)) {
        for (const x of s) walk(x);
        return;
      }
      for (const [k, v] of Object.entries(s)) {
        used.add(k);
        if (k === 'properties') for (const x of Object.values(v as object)) walk(x);
        else if (k !== 'enum' && k !== 'const') walk(v);
      }
    };
    for (const def of Object.values(resultDefs().defs)) walk(def);
    expect([...used].filter((k) => !(CHECKED_KEYWORDS as readonly string[]).includes(k))).toEqual([]);
  });
});

describe('generated types against zod', () => {
  it('equal z.output of the RPC result schemas', () => {
    expectTypeOf<RpcResults['node_info']>().toEqualTypeOf<z.output<typeof R.nodeInfoResult>>();
    expectTypeOf<RpcResults['list_channels']>().toEqualTypeOf<z.output<typeof R.listChannelsResult>>();
    expectTypeOf<RpcResults['get_payment']>().toEqualTypeOf<z.output<typeof R.paymentRecord>>();
    // invoiceJson takes any attribute schema, so zod types attrs as unknown[]; the client's are the seed's.
    expectTypeOf<RpcResults['get_invoice']>().toExtend<z.output<typeof R.storedInvoiceRecord>>();
    expectTypeOf<RpcResults['graph_nodes']>().toEqualTypeOf<z.output<typeof R.graphNodesResult>>();
    expectTypeOf<StoreChange>().toEqualTypeOf<z.output<typeof R.storeChange>>();
  });

  it('give the store bus changes their notification type', () => {
    expectTypeOf<BusChange>().toExtend<StoreChange | { PutCkbInvoiceStatus: unknown }>();
  });
});

const pubkey = `02${'ab'.repeat(32)}`;
const peer = { pubkey, peer_id: `Qm${'a'.repeat(44)}`, address: '/ip4/127.0.0.1/tcp/8228' };

describe('run-time checks', () => {
  it('accept a reply of the declared shape and give it back as is', () => {
    const reply = { peers: [peer] };
    expect(RESULT_SCHEMAS.list_peers.parse(reply)).toBe(reply);
    expect(RESULT_SCHEMAS.settle_invoice.parse({})).toEqual({});
    expect(RESULT_SCHEMAS.connect_peer.parse(null)).toBeNull();
    expect(RESULT_SCHEMAS.subscribe_store_changes.parse(3)).toBe(3);
  });

  it('name the field that departs: wrong type, bad form, missing, undeclared, off the enum', () => {
    const miss = (method: keyof RpcResults, value: unknown) => {
      try {
        RESULT_SCHEMAS[method].parse(value);
      } catch (e) {
        expect(e).toBeInstanceOf(ResultMismatchError);
        return (e as Error).message;
      }
      throw new Error(`${method} accepted ${JSON.stringify(value)}`);
    };
    expect(miss('list_peers', { peers: [{ ...peer, pubkey: 1 }] })).toMatch(
      /^\$\.peers\[0\]\.pubkey: expected string/,
    );
    expect(miss('list_peers', { peers: [{ ...peer, pubkey: `04${'ab'.repeat(32)}` }] })).toMatch(
      /^\$\.peers\[0\]\.pubkey: expected a string matching/,
    );
    expect(miss('list_peers', { peers: [{ pubkey, address: 'x' }] })).toBe('$.peers[0].peer_id: missing');
    expect(miss('list_peers', { peers: [], extra: 1 })).toBe('$.extra: not a field of this result');
    expect(miss('add_tlc', { tlc_id: '0x01' })).toMatch(/^\$\.tlc_id: expected a string matching/);
    expect(miss('subscribe_store_changes', 1.5)).toBe('$: expected integer, got number');
    expect(miss('connect_peer', {})).toBe('$: expected null, got object');
    const payment = {
      payment_hash: `0x${'11'.repeat(32)}`,
      status: 'Done',
      created_at: '0x1',
      last_updated_at: '0x1',
      failed_error: null,
      fee: '0x0',
      custom_records: null,
      routers: [],
    };
    expect(miss('get_payment', payment)).toMatch(/^\$\.status: expected one of "Created"/);
    expect(RESULT_SCHEMAS.get_payment.parse({ ...payment, status: 'Success' })).toMatchObject({
      status: 'Success',
    });
    expect(miss('get_payment', { ...payment, status: 'Success', custom_records: { a: 'zz' } })).toMatch(
      /^\$\.custom_records: matches none of/,
    );
  });
});
