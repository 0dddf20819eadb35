/**
 * `rpc.discover` on a real node with every module enabled, and the OpenRPC driver against it:
 * every method called with `[]` and with params built from its schema, plus calls that succeed
 * without setup (an invoice's life, a backup, a profile, a watched channel); every result must
 * match the method's result schema and every error be one the method declares.
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MODULE_NAMES } from '../../src/rpc/method.ts';
import { OPENRPC_JSON } from '../../tools/docs-rpc.ts';
import { type DevchainProcess, startChannelNode, startDevchain } from '../channel/process-helpers.ts';
import type { NodeProcess } from '../helpers/node-process.ts';
import {
  checkAnswer,
  driveDocument,
  metaSchemaValidator,
  newAjv,
  type OpenRpcDoc,
} from './openrpc-driver.ts';

let chain: DevchainProcess;
let node: NodeProcess;
let doc: OpenRpcDoc;

beforeAll(async () => {
  chain = await startDevchain([1]);
  node = await startChannelNode(1, chain.url, {}, undefined, {}, [...MODULE_NAMES]);
  const r = await node.call('rpc.discover', []);
  doc = r.result;
}, 120_000);

afterAll(async () => {
  await node?.stop();
  await chain?.stop();
});

const call = async (method: string, params: unknown[]) => (await node.call(method, params)) as never;

describe('rpc.discover', () => {
  it('answers a document valid against the OpenRPC meta-schema, the one docs/openrpc.json holds', () => {
    const validate = metaSchemaValidator();
    expect(validate(doc), JSON.stringify(validate.errors?.slice(0, 3))).toBe(true);
    expect(doc).toEqual(JSON.parse(fs.readFileSync(OPENRPC_JSON, 'utf8')));
  });

  it('describes the off-by-default modules when they are enabled', async () => {
    const names = doc.methods.map((m) => m.name);
    expect(names).toContain('pprof');
    expect(names).toContain('backup_now');
    expect(names).toContain('rpc.discover');
  });
});

describe('the OpenRPC driver', () => {
  it('finds no violation over every method', async () => {
    const { violations, outcomes } = await driveDocument(doc, call, {
      overrides: {
        pprof: [{ duration_secs: '0x1' }],
        new_invoice: [{ amount: '0x64', currency: 'Fibd', description: 'openrpc' }],
      },
    });
    expect(violations).toEqual([]);
    // Every method was called, none failed inside (-32603), and answers were not all refusals.
    expect(new Set(outcomes.map((o) => o.method))).toEqual(new Set(doc.methods.map((m) => m.name)));
    expect(outcomes.filter((o) => o.code === -32603)).toEqual([]);
    const succeeded = new Set(outcomes.filter((o) => o.kind === 'result').map((o) => o.method));
    for (const m of [
      'node_info',
      'rpc.discover',
      'list_peers',
      'list_channels',
      'list_payments',
      'graph_nodes',
      'graph_channels',
      'new_invoice',
      'backup_now',
      'pprof',
      'unsubscribe_store_changes',
    ])
      expect(succeeded, m).toContain(m);
  }, 120_000);

  it('checks the results of an invoice through its life and of a watched channel', async () => {
    const ajv = newAjv();
    const validate = (s: object) => ajv.compile(s);
    const byName = (n: string) => doc.methods.find((m) => m.name === n)!;
    const expectValid = async (method: string, params: unknown[]) => {
      const reply = await node.call(method, params);
      expect(reply.error, method).toBeUndefined();
      expect(checkAnswer(doc, byName(method), reply, validate), method).toBeUndefined();
      return reply.result;
    };
    const created = await expectValid('new_invoice', [
      { amount: '0x5f5e100', currency: 'Fibd', description: 'coffee', expiry: '0xe10', allow_mpp: true },
    ]);
    const hash = created.invoice.data.payment_hash;
    await expectValid('parse_invoice', [{ invoice: created.invoice_address }]);
    await expectValid('get_invoice', [{ payment_hash: hash }]);
    await expectValid('cancel_invoice', [{ payment_hash: hash }]);
    const watched = {
      channel_id: `0x${'cd'.repeat(32)}`,
      local_settlement_key: `0x${'ab'.repeat(32)}`,
      remote_settlement_key: '0279be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798',
      local_funding_pubkey: '0279be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798',
      remote_funding_pubkey: '0279be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798',
      settlement_data: { local_amount: '0x0', remote_amount: '0x0', tlcs: [] },
    };
    await expectValid('create_watch_channel', [watched]);
    await expectValid('remove_watch_channel', [{ channel_id: watched.channel_id }]);
  }, 60_000);
});
