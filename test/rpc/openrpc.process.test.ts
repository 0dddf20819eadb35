/**
 * `rpc.discover` on a real node with every module enabled (the cross-chain hub too, on the LND
 * double), and the OpenRPC driver against it: every method called with `[]` and with params built
 * from its schema, plus calls that succeed without setup (an invoice's life, a backup, a profile,
 * a watched channel, cch orders both ways); every result must match the method's result schema
 * and every error be one the method declares.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LndDouble } from '../../src/devnet/lnd-double.ts';
import { decodeInvoice, encodeInvoice, signInvoice } from '../../src/invoice/codec.ts';
import { MODULE_NAMES } from '../../src/rpc/method.ts';
import { OPENRPC_JSON } from '../../tools/docs-rpc.ts';
import { cchSection, type Script, startFiberNode } from '../cch/helpers.ts';
import { type DevchainProcess, startDevchain, testUdtWhitelist, until } from '../channel/process-helpers.ts';
import type { NodeProcess } from '../helpers/node-process.ts';
import {
  checkAnswer,
  driveDocument,
  metaSchemaValidator,
  newAjv,
  type OpenRpcDoc,
} from './openrpc-driver.ts';

let chain: DevchainProcess;
let double: LndDouble;
let node: NodeProcess;
let doc: OpenRpcDoc;
/** The dev chain's test UDT, standing for the wrapped BTC. */
let wrappedBtc: Script;

beforeAll(async () => {
  chain = await startDevchain([1]);
  const { udt, whitelist } = await testUdtWhitelist(chain.url);
  wrappedBtc = udt;
  double = await LndDouble.start();
  node = await startFiberNode(1, chain.url, whitelist, {
    services: ['fiber', 'rpc', 'ckb', 'cch'],
    cch: cchSection(double, udt),
    modules: [...MODULE_NAMES],
  });
  const r = await node.call('rpc.discover', []);
  doc = r.result;
}, 120_000);

afterAll(async () => {
  await node?.stop();
  await double?.stop();
  await chain?.stop();
});

/** `invoice` as a node that is in no graph would issue it: signed by a random key. */
function resigned(invoice: string): string {
  const inv = decodeInvoice(invoice);
  inv.data.attrs = inv.data.attrs.filter((a) => a.kind !== 'PayeePublicKey');
  return encodeInvoice(signInvoice(inv, randomBytes(32)));
}

/** A Fiber invoice of the node in wrapped BTC with a SHA-256 hash: what receive_btc pays. */
async function wrappedBtcInvoice(amount: string): Promise<string> {
  const r = await node.call('new_invoice', [
    { amount, currency: 'Fibd', udt_type_script: wrappedBtc, hash_algorithm: 'sha256' },
  ]);
  expect(r.error).toBeUndefined();
  return r.result.invoice_address;
}

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
    expect(names).toContain('send_btc');
  });
});

describe('the OpenRPC driver', () => {
  it('finds no violation over every method', async () => {
    const { violations, outcomes } = await driveDocument(doc, call, {
      overrides: {
        pprof: [{ duration_secs: '0x1' }],
        new_invoice: [{ amount: '0x64', currency: 'Fibd', description: 'openrpc' }],
        send_btc: [{ btc_pay_req: double.outsideInvoice({ amountSat: 1000 }).request, currency: 'Fibd' }],
        receive_btc: [{ fiber_pay_req: await wrappedBtcInvoice('0x3e8') }],
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
      'send_btc',
      'receive_btc',
    ])
      expect(succeeded, m).toContain(m);
  }, 120_000);

  /** Calls `method`, which must succeed with a result that matches its published schema. */
  async function expectValid(method: string, params: unknown[]) {
    const ajv = newAjv();
    const reply = await node.call(method, params);
    expect(reply.error, method).toBeUndefined();
    const spec = doc.methods.find((m) => m.name === method)!;
    expect(
      checkAnswer(doc, spec, reply, (s) => ajv.compile(s)),
      method,
    ).toBeUndefined();
    return reply.result;
  }

  it('checks the results of an invoice through its life and of a watched channel', async () => {
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

  it('checks the results of cch orders both ways, and of one that failed', async () => {
    // Fiber → Lightning: an order waiting for the user's payment to the hub's Fiber hold invoice.
    const out = double.outsideInvoice({ amountSat: 2000 });
    const sent = await expectValid('send_btc', [{ btc_pay_req: out.request, currency: 'Fibd' }]);
    expect(sent).toMatchObject({ payment_hash: out.paymentHash, status: 'Pending', failure_reason: null });
    expect(sent.incoming_invoice.Fiber).toMatch(/^fibd/);
    expect(await expectValid('get_cch_order', [{ payment_hash: out.paymentHash }])).toEqual(sent);

    // Lightning → Fiber: the Lightning payer pays the hub's hold invoice; the Fiber invoice the
    // hub must then pay is a stranger's, and the hub has no channel to pay it with: the order
    // fails with the node's reason and the Lightning payer is refunded.
    const stranger = resigned(await wrappedBtcInvoice('0x7d0'));
    const received = await expectValid('receive_btc', [{ fiber_pay_req: stranger }]);
    expect(received.incoming_invoice.Lightning).toMatch(/^lnbcrt/);
    await expect(double.payHoldInvoice(received.incoming_invoice.Lightning)).rejects.toThrow(/canceled/);
    const hash = received.payment_hash;
    await until(
      'the order to fail',
      () => node.call('get_cch_order', [{ payment_hash: hash }]),
      (r) => r.result?.status === 'Failed',
    );
    const failed = await expectValid('get_cch_order', [{ payment_hash: hash }]);
    expect(failed.failure_reason).toMatch(/^outgoing payment failed: .*Failed to build route/);
  }, 60_000);
});
