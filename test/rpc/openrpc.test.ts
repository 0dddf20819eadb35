/**
 * The OpenRPC document: valid against @open-rpc/meta-schema (both output styles), its examples
 * valid against its own schemas, and the checked-in docs/openrpc.json and docs/rpc.md current.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { decodeInvoice } from '../../src/invoice/codec.ts';
import { invoiceToJson } from '../../src/invoice/json.ts';
import { VERSION } from '../../src/node/build-info.ts';
import { loadConfig } from '../../src/node/config.ts';
import { catalogMethods } from '../../src/rpc/catalog.ts';
import { v08Channel, v08Flags, v08StateName } from '../../src/rpc/compat.ts';
import { MODULE_NAMES } from '../../src/rpc/method.ts';
import { openRpcDocument } from '../../src/rpc/openrpc.ts';
import { PERMISSIONS } from '../../src/rpc/permissions.ts';
import { OPENRPC_JSON, RPC_MD, renderRpcDocs } from '../../tools/docs-rpc.ts';
import { callsFor, checkAnswer, metaSchemaValidator, newAjv, type OpenRpcDoc } from './openrpc-driver.ts';

type Doc = {
  methods: {
    name: string;
    params: { name: string; required: boolean; schema: object }[];
    result: { schema: object };
    examples?: { name: string; params: { value: unknown }[]; result: { value: unknown } }[];
  }[];
};

const ajv = newAjv();
const validateDocument = metaSchemaValidator();

const seedDoc = openRpcDocument(catalogMethods(VERSION), { version: VERSION }) as unknown as Doc;
const v08Doc = openRpcDocument(catalogMethods(VERSION, 'fnn-0.8'), {
  version: VERSION,
  compat: 'fnn-0.8',
}) as unknown as Doc;

describe('OpenRPC document', () => {
  it('validates against @open-rpc/meta-schema, in both output styles', () => {
    for (const doc of [seedDoc, v08Doc]) {
      const ok = validateDocument(doc);
      expect(validateDocument.errors ?? [], JSON.stringify(validateDocument.errors?.slice(0, 3))).toEqual([]);
      expect(ok).toBe(true);
    }
    // The check can fail: a method without params, or a schema that is no JSON Schema.
    const broken = structuredClone(seedDoc) as unknown as { methods: Record<string, unknown>[] };
    delete broken.methods[0]!.params;
    expect(validateDocument(broken)).toBe(false);
    const badSchema = structuredClone(seedDoc) as unknown as { methods: { result: { schema: unknown } }[] };
    badSchema.methods[0]!.result.schema = { type: 7 };
    expect(validateDocument(badSchema)).toBe(false);
  });

  it('lists every method of the permission table, each with a description and a result schema', () => {
    const names = seedDoc.methods.map((m) => m.name);
    expect(new Set(names).size).toBe(names.length);
    expect(names.sort()).toEqual(Object.keys(PERMISSIONS).sort());
    for (const spec of catalogMethods(VERSION)) {
      expect(spec.description, spec.name).toMatch(/\w{3,}/);
      expect(spec.result, spec.name).toBeDefined();
      expect(MODULE_NAMES).toContain(spec.module);
    }
  });

  it('says what every params field means', () => {
    const missing = seedDoc.methods.flatMap((m) =>
      m.params.flatMap((p) =>
        Object.entries(
          (p.schema as { properties?: Record<string, { description?: string }> }).properties ?? {},
        )
          .filter(([, prop]) => !prop.description)
          .map(([field]) => `${m.name}.${field}`),
      ),
    );
    expect(missing).toEqual([]);
  });

  it('has examples whose params and results match its own schemas', () => {
    let seen = 0;
    for (const m of seedDoc.methods) {
      for (const ex of m.examples ?? []) {
        seen++;
        const checkResult = ajv.compile(m.result.schema);
        expect(checkResult(ex.result.value), `${m.name} ${ex.name}`).toBe(true);
        ex.params.forEach((p, i) => {
          expect(ajv.compile(m.params[i]!.schema)(p.value), `${m.name} ${ex.name} params`).toBe(true);
        });
      }
    }
    expect(seen).toBeGreaterThanOrEqual(5);
  });

  it("parse_invoice's example is what parsing its invoice gives", () => {
    const ex = seedDoc.methods.find((m) => m.name === 'parse_invoice')!.examples![0]!;
    const invoice = (ex.params[0]!.value as { invoice: string }).invoice;
    expect(ex.result.value).toEqual({ invoice: invoiceToJson(decodeInvoice(invoice)) });
  });

  it('result schemas reject a record with a field the handler does not write', () => {
    const listChannels = seedDoc.methods.find((m) => m.name === 'list_channels')!;
    const check = ajv.compile(listChannels.result.schema);
    expect(check({ channels: [] })).toBe(true);
    expect(check({ channels: [], extra: 1 })).toBe(false);
  });

  it('checked-in docs/openrpc.json and docs/rpc.md are what `npm run docs:rpc` writes', () => {
    const { json, markdown } = renderRpcDocs();
    const stale = 'stale: run `npm run docs:rpc` and commit the result';
    expect(fs.readFileSync(OPENRPC_JSON, 'utf8') === json, `docs/openrpc.json ${stale}`).toBe(true);
    expect(fs.readFileSync(RPC_MD, 'utf8') === markdown, `docs/rpc.md ${stale}`).toBe(true);
  });
});

describe('the OpenRPC driver', () => {
  it('reports a result off its schema and an error the method does not declare', () => {
    const doc = seedDoc as unknown as OpenRpcDoc;
    const m = doc.methods.find((x) => x.name === 'list_peers')!;
    const validate = (s: object) => ajv.compile(s);
    expect(checkAnswer(doc, m, { result: { peers: [] } }, validate)).toBeUndefined();
    expect(checkAnswer(doc, m, { result: { peers: [{ pubkey: 'zz' }] } }, validate)).toMatch(
      /off its schema/,
    );
    expect(checkAnswer(doc, m, { error: { code: -32602, message: 'x' } }, validate)).toBeUndefined();
    expect(checkAnswer(doc, m, { error: { code: -32603, message: 'x' } }, validate)).toMatch(/undeclared/);
  });

  it('builds params that pass the schema they come from', () => {
    for (const m of (seedDoc as unknown as OpenRpcDoc).methods) {
      const [built] = callsFor(m, {}).slice(-1);
      m.params.forEach((p, i) => {
        expect(ajv.compile(p.schema)(built![i]), m.name).toBe(true);
      });
    }
  });
});

describe('fnn-0.8 output names', () => {
  it('is set by rpc.compat (file, RPC_COMPAT, --rpc-compat); another value stops start-up naming the field', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'strand-compat-'));
    try {
      expect(loadConfig({ dir, env: {} }).rpc.compat).toBe('seed');
      expect(loadConfig({ dir, env: { RPC_COMPAT: 'fnn-0.8' } }).rpc.compat).toBe('fnn-0.8');
      expect(loadConfig({ dir, env: {}, flags: { 'rpc-compat': 'fnn-0.8' } }).rpc.compat).toBe('fnn-0.8');
      expect(() => loadConfig({ dir, env: { RPC_COMPAT: 'fnn-0.9' } })).toThrow(
        /rpc\.compat.*seed or fnn-0\.8/,
      );
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('writes states in PascalCase and flags as fnn v0.8 does, composites included', () => {
    expect(v08StateName('CHANNEL_READY')).toBe('ChannelReady');
    expect(v08StateName('COLLABORATING_FUNDING_TX')).toBe('CollaboratingFundingTx');
    expect(v08Flags('NEGOTIATING_FUNDING', ['OUR_INIT_SENT'])).toBe('OUR_INIT_SENT|INIT_SENT');
    expect(v08Flags('SHUTTING_DOWN', ['OUR_SHUTDOWN_SENT', 'THEIR_SHUTDOWN_SENT'])).toBe(
      'OUR_SHUTDOWN_SENT|THEIR_SHUTDOWN_SENT|AWAITING_PENDING_TLCS',
    );
    expect(v08Flags('CLOSED', ['COOPERATIVE', 'RESTORED_FROM_BACKUP'])).toBe('COOPERATIVE');
    expect(v08Flags('CLOSED', [])).toBe('');
  });

  it('drops peer_id and the ready state flags from a channel record', () => {
    const record = {
      peer_id: 'QmSRcPqUn4aQrKHXyCDjGn2qBVf43tWBDS2Wj9QDUZXtZp',
      pubkey: `02${'11'.repeat(32)}`,
      state: { state_name: 'CHANNEL_READY', state_flags: [] },
    };
    expect(v08Channel(record as never)).toEqual({
      pubkey: record.pubkey,
      state: { state_name: 'ChannelReady' },
    });
  });
});
