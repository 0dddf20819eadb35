/**
 * The typed client (`strand/client`) against real `strand node` processes: typed results that
 * match what the node sends (checked with the client's result checks, generated from the RPC's),
 * errors with their codes, a node that wants Biscuit tokens, the store-change iterator and its unsubscribe, and
 * the package export loaded by a consumer outside the repository through tsx.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import {
  createClient,
  RpcError,
  RpcErrorCode,
  RpcTransportError,
  type StoreChange,
  type StrandClient,
  toHex,
} from '../../src/client/index.ts';
import { RESULT_SCHEMAS } from '../../src/client/results.ts';
import { generateKeyPair, mintToken } from '../../src/rpc/auth.ts';
import { DEFAULT_MODULES } from '../../src/rpc/method.ts';
import { type DevchainProcess, readyPair, startDevchain, until } from '../channel/process-helpers.ts';
import { type NodeProcess, startNode, tempDir } from '../helpers/node-process.ts';

const REPO = path.resolve(import.meta.dirname, '../..');
const MODULES = [...DEFAULT_MODULES, 'pubsub'];
const preimage = (n: number) => `0x${n.toString(16).padStart(64, '0')}`;

/** `value` is exactly what the client declares for `method`: its strict result check accepts it. */
function declared<M extends keyof typeof RESULT_SCHEMAS>(method: M, value: unknown): void {
  expect(RESULT_SCHEMAS[method].parse(value), method).toEqual(value);
}

/** The error a call rejects with (fails the test when it resolves). */
async function rejection(p: Promise<unknown>): Promise<RpcError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(RpcError);
  return e as RpcError;
}

describe('a node without auth', () => {
  let node: NodeProcess;
  let client: StrandClient;

  beforeAll(async () => {
    node = await startNode({ config: { rpc: { listening_addr: '127.0.0.1:0', enabled_modules: MODULES } } });
    client = createClient({ url: node.url });
  });
  afterAll(async () => {
    await node.stop();
  });

  it('answers typed results that the declared result schemas accept', async () => {
    const info = await client.node_info();
    expectTypeOf(info.pubkey).toEqualTypeOf<string>();
    expectTypeOf(info.node_name).toEqualTypeOf<string | null>();
    declared('node_info', info);
    expect(info.pubkey).toMatch(/^0[23][0-9a-f]{64}$/);

    const created = await client.new_invoice({
      amount: toHex(100_000_000n),
      currency: 'Fibd',
      description: 'coffee',
      payment_preimage: preimage(1),
    });
    declared('new_invoice', created);
    const hash = created.invoice.data.payment_hash;
    const parsed = await client.parse_invoice({ invoice: created.invoice_address });
    declared('parse_invoice', parsed);
    expect(parsed.invoice.data.payment_hash).toBe(hash);
    const stored = await client.get_invoice({ payment_hash: hash });
    expectTypeOf(stored.status).toEqualTypeOf<'Open' | 'Cancelled' | 'Expired' | 'Received' | 'Paid'>();
    declared('get_invoice', stored);
    expect(stored.status).toBe('Open');
    const cancelled = await client.cancel_invoice({ payment_hash: hash });
    declared('cancel_invoice', cancelled);
    expect(cancelled.status).toBe('Cancelled');

    // The methods whose params are all optional take none; `call` is the same call by name.
    declared('list_peers', await client.list_peers());
    declared('graph_nodes', await client.call('graph_nodes', { limit: '0x5' }));
    declared('graph_channels', await client.graph_channels());
  });

  it('throws RpcError with the code, the message naming the field, and the data', async () => {
    const bad = await rejection(client.get_invoice({ payment_hash: 'not-a-hash' }));
    expect(bad.code).toBe(RpcErrorCode.InvalidParams);
    expect(bad.is('InvalidParams')).toBe(true);
    expect(bad.codeName).toBe('InvalidParams');
    expect(bad.method).toBe('get_invoice');
    expect(bad.message).toContain('payment_hash');

    const unknown = preimage(0xdead);
    const refused = await rejection(client.get_invoice({ payment_hash: unknown }));
    expect(refused.code).toBe(-32000);
    expect(refused.codeName).toBe('ServerError');
    expect(refused.data).toEqual({ payment_hash: unknown }); // invoice refusals echo the params

    const missing = await rejection(client.request('no_such_method'));
    expect(missing.is('MethodNotFound')).toBe(true);
    // Served by a module this node does not enable.
    expect((await rejection(client.backup_now({}))).is('MethodNotFound')).toBe(true);
  });

  it('iterates store changes and unsubscribes on the node when the loop ends', async () => {
    const sub = await client.subscribeStoreChanges();
    expect(sub.id).toBeGreaterThan(0);
    const created = await client.new_invoice({
      amount: '0x64',
      currency: 'Fibd',
      payment_preimage: preimage(2),
    });
    const hash = created.invoice.data.payment_hash;
    const seen: StoreChange[] = [];
    for await (const change of sub) {
      seen.push(change);
      if ('PutPreimage' in change && change.PutPreimage.payment_hash === hash) break;
    }
    expect(seen).toEqual([
      { PutCkbInvoiceStatus: { payment_hash: hash, invoice_status: 'Open' } },
      { PutPreimage: { payment_hash: hash, payment_preimage: preimage(2) } },
    ]);
    // `break` called return(): the node found and cancelled the subscription.
    expect(await sub.close()).toBe(true);
    expect(await sub.next()).toEqual({ done: true, value: undefined });
  });

  it('is the package export `strand/client`, loaded by a consumer through tsx', async () => {
    const dir = tempDir('strand-consumer-');
    fs.mkdirSync(path.join(dir, 'node_modules'));
    fs.symlinkSync(REPO, path.join(dir, 'node_modules', 'strand'));
    fs.symlinkSync(path.join(REPO, 'node_modules', 'tsx'), path.join(dir, 'node_modules', 'tsx'));
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
    fs.writeFileSync(
      path.join(dir, 'main.ts'),
      [
        "import { createClient, RpcError } from 'strand/client';",
        'const node = createClient(process.argv[2]!);',
        'const info = await node.node_info();',
        'const e = await node.get_invoice({ payment_hash: "0x1" }).catch((err: unknown) => err);',
        'console.log(JSON.stringify({ pubkey: info.pubkey, code: e instanceof RpcError ? e.code : null }));',
      ].join('\n'),
    );
    const r = spawnSync(process.execPath, ['--import', 'tsx', 'main.ts', node.url], {
      cwd: dir,
      encoding: 'utf8',
    });
    expect(r.stderr).toBe('');
    const { pubkey } = await client.node_info();
    expect(JSON.parse(r.stdout)).toEqual({ pubkey, code: -32602 });
  });
});

describe('a node that wants Biscuit tokens', () => {
  let node: NodeProcess;
  let reader: string;
  let root: { privateKey: string; publicKey: string };

  beforeAll(async () => {
    root = await generateKeyPair();
    reader = await mintToken(root.privateKey, {
      facts: ['read("node")', 'read("cch")', 'write("invoices")'],
    });
    node = await startNode({
      config: {
        rpc: { listening_addr: '127.0.0.1:0', enabled_modules: MODULES, auth_public_key: root.publicKey },
      },
    });
  });
  afterAll(async () => {
    await node.stop();
  });

  it('calls with the token, and answers Unauthorized without it or beyond its rights', async () => {
    const withToken = createClient({ url: node.url, token: reader });
    expect((await withToken.node_info()).pubkey).toMatch(/^0[23]/);

    const anonymous = createClient(node.url);
    const noToken = await rejection(anonymous.node_info());
    expect(noToken.code).toBe(-32999);
    expect(noToken.is('Unauthorized')).toBe(true);

    const beyond = await rejection(withToken.list_channels());
    expect(beyond.is('Unauthorized')).toBe(true);
    const forged = createClient({
      url: node.url,
      token: await mintToken((await generateKeyPair()).privateKey, { facts: ['read("node")'] }),
    });
    expect((await rejection(forged.node_info())).is('Unauthorized')).toBe(true);
  });

  it('subscribes with the token; ends the iteration with an error when the node goes away', async () => {
    const anonymous = createClient(node.url);
    expect((await rejection(anonymous.subscribeStoreChanges())).is('Unauthorized')).toBe(true);

    const client = createClient({ url: node.url, token: reader });
    const sub = await client.subscribeStoreChanges();
    const created = await client.new_invoice({
      amount: '0x1',
      currency: 'Fibd',
      payment_preimage: preimage(3),
    });
    const first = await sub.next();
    expect(first.done).toBe(false);
    expect(JSON.stringify(first.value)).toContain(created.invoice.data.payment_hash.slice(2));

    const pending = sub.next(); // what is buffered first, then the failure
    await node.stop();
    const outcome = await (async () => {
      for (let r = await pending; ; r = await sub.next()) if (r.done) return 'done';
    })().catch((e: unknown) => e);
    expect(outcome).toBeInstanceOf(RpcTransportError);
    expect(await sub.next()).toEqual({ done: true, value: undefined });
    expect(await sub.close()).toBe(false);
  });
});

describe('two nodes with a channel on a dev chain', () => {
  let chain: DevchainProcess;
  let a: NodeProcess;
  let b: NodeProcess;

  beforeAll(async () => {
    chain = await startDevchain([1, 2]);
    // readyPair connects and opens the channel through `rpc()`, itself on the client.
    ({ a, b } = await readyPair(chain.url, [
      'info',
      'peer',
      'channel',
      'payment',
      'invoice',
      'graph',
      'pubsub',
    ]));
  }, 180_000);
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await chain?.stop();
  });

  it('pays an invoice; channels, payments and the payee store changes match the result schemas', async () => {
    const alice = createClient(a.url);
    const bob = createClient(b.url);
    const opener = await alice.list_channels();
    declared('list_channels', opener);
    expect(opener.channels.map((c) => c.state.state_name)).toEqual(['CHANNEL_READY']);
    const changes = await bob.subscribeStoreChanges();

    const invoice = await bob.new_invoice({
      amount: toHex(100_000_000n),
      currency: 'Fibd',
      description: 'coffee',
    });
    const hash = invoice.invoice.data.payment_hash;
    const sent = await alice.send_payment({ invoice: invoice.invoice_address });
    declared('send_payment', sent);
    expect(sent.payment_hash).toBe(hash);
    const done = await until(
      'the payment to end',
      () => alice.get_payment({ payment_hash: hash }),
      (p) => p.status === 'Success' || p.status === 'Failed',
    );
    declared('get_payment', done);
    expect(done.status).toBe('Success');
    declared('list_payments', await alice.list_payments({ status: 'Success' }));
    // The payee's side: an acceptor's record, the amount received on it.
    declared('list_channels', await bob.list_channels());

    let paid: StoreChange | undefined;
    for await (const change of changes) {
      if ('PutCkbInvoiceStatus' in change && change.PutCkbInvoiceStatus.invoice_status === 'Paid') {
        paid = change;
        break;
      }
    }
    expect(paid).toEqual({ PutCkbInvoiceStatus: { payment_hash: hash, invoice_status: 'Paid' } });
    expect(await changes.close()).toBe(true);
  });
});
