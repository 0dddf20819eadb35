/**
 * The dashboard as the RPC server serves it: its files with their types and security headers only
 * when `dashboard` is on, the WebSocket bearer taken from `?access_token=`, and the page itself in
 * headless Chromium against a server with auth on: it asks for the token, then shows the node and
 * renders a payment pushed by the store_changes subscription. (With a real devnet:
 * dashboard.process.test.ts.)
 */

import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createAuthorizer, generateKeyPair, mintToken, OPEN_ACCESS } from '../../src/rpc/auth.ts';
import { upgradeAuthorization } from '../../src/rpc/dashboard.ts';
import { type MethodSpec, method } from '../../src/rpc/method.ts';
import { pubsubMethods } from '../../src/rpc/modules/pubsub.ts';
import { type RpcServer, startRpcServer } from '../../src/rpc/server.ts';
import { StoreChangeBus } from '../../src/store/changes.ts';
import { chromiumAvailable, launchChromium } from '../helpers/chromium.ts';
import { wsClient } from '../helpers/ws-client.ts';

const PUBKEY = `02${'ab'.repeat(32)}`;
const HASH = `0x${'cd'.repeat(32)}`;
const bus = new StoreChangeBus();
const stub = (name: string, result: unknown): MethodSpec =>
  method({ name, module: 'info', params: z.object({}).passthrough(), handler: () => result });
const METHODS: MethodSpec[] = [
  method({
    name: 'node_info',
    module: 'info',
    params: null,
    handler: () => ({
      node_name: 'stubby',
      pubkey: PUBKEY,
      version: 'test',
      addresses: [],
      chain_hash: HASH,
    }),
  }),
  stub('list_peers', { peers: [] }),
  stub('list_channels', { channels: [] }),
  stub('graph_nodes', { nodes: [{ node_name: 'stubby', pubkey: PUBKEY }], last_cursor: null }),
  stub('graph_channels', { channels: [], last_cursor: null }),
  stub('list_payments', { payments: [], last_cursor: null }),
  stub('get_payment', {
    payment_hash: HASH,
    status: 'Success',
    created_at: '0x19ab0000000',
    last_updated_at: '0x19ab0000100',
    failed_error: null,
    fee: '0x2710',
  }),
  ...pubsubMethods(bus),
];

const servers: RpcServer[] = [];
async function serve(opts: { dashboard: boolean; auth?: Awaited<ReturnType<typeof createAuthorizer>> }) {
  const server = await startRpcServer({
    listeningAddr: '127.0.0.1:0',
    methods: METHODS,
    auth: opts.auth ?? OPEN_ACCESS,
    corsEnabled: false,
    corsAllowedOrigins: [],
    maxBodySize: 1 << 20,
    dashboard: opts.dashboard,
  });
  servers.push(server);
  return server;
}

afterAll(async () => {
  for (const s of servers) await s.close();
});

describe('dashboard files', () => {
  it('are served with their type and same-origin headers when rpc.dashboard is on', async () => {
    const { url } = await serve({ dashboard: true });
    const index = await fetch(`${url}/dashboard/`);
    expect(index.status).toBe(200);
    expect(index.headers.get('content-type')).toMatch(/^text\/html/);
    expect(index.headers.get('content-security-policy')).toContain("default-src 'self'");
    expect(index.headers.get('x-frame-options')).toBe('DENY');
    expect(await index.text()).toContain('<script type="module" src="app.js">');
    const app = await fetch(`${url}/dashboard/app.js`);
    expect(app.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect((await fetch(`${url}/dashboard/style.css`)).headers.get('content-type')).toMatch(/^text\/css/);
    expect((await fetch(`${url}/dashboard`, { redirect: 'manual' })).headers.get('location')).toBe(
      '/dashboard/',
    );
    // Only the files of the folder, never a path: a traversal or an unknown name is a 404.
    for (const p of ['/dashboard/nope.js', '/dashboard/..%2Fdashboard.ts', '/dashboard/%2E%2E%2Fserver.ts']) {
      expect((await fetch(`${url}${p}`)).status, p).toBe(404);
    }
    // The RPC is untouched.
    const rpc = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'node_info', params: [] }),
    });
    expect(((await rpc.json()) as any).result.node_name).toBe('stubby');
  });

  it('are not served when rpc.dashboard is off', async () => {
    const { url } = await serve({ dashboard: false });
    const res = await fetch(`${url}/dashboard/`);
    expect(res.status).toBe(404);
    expect(((await res.json()) as any).error.code).toBe(-32600);
  });
});

describe('WebSocket bearer from ?access_token=', () => {
  it('prefers the header, else reads the query', () => {
    expect(upgradeAuthorization('Bearer a', '/?access_token=b')).toBe('Bearer a');
    expect(upgradeAuthorization(undefined, '/?access_token=b%2Bc')).toBe('Bearer b+c');
    expect(upgradeAuthorization(undefined, '/')).toBeUndefined();
    expect(upgradeAuthorization(undefined, '/?access_token=')).toBeUndefined();
  });

  it('authorises a subscription with a valid token and refuses one without', async () => {
    const root = await generateKeyPair();
    const auth = await createAuthorizer(root.publicKey);
    const token = await mintToken(root.privateKey, { facts: ['read("cch")'] });
    const { url } = await serve({ dashboard: true, auth });
    const anonymous = await wsClient(url);
    expect((await anonymous.call('subscribe_store_changes')).error.code).toBe(-32999);
    anonymous.close();
    const bearer = await wsClient(`${url}/?access_token=${encodeURIComponent(token)}`);
    expect(typeof (await bearer.call('subscribe_store_changes')).result).toBe('number');
    bearer.close();
  });
});

describe.skipIf(!chromiumAvailable())('dashboard page in Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('asks for the token, then shows the node and a payment pushed live', async () => {
    const root = await generateKeyPair();
    const auth = await createAuthorizer(root.publicKey);
    const token = await mintToken(root.privateKey, {
      facts: [
        'read("node")',
        'read("peers")',
        'read("channels")',
        'read("graph")',
        'read("payments")',
        'read("cch")',
      ],
    });
    const { url } = await serve({ dashboard: true, auth });
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    await page.goto(`${url}/dashboard/`);
    await page.waitForSelector('#token-view:not([hidden])');
    await page.fill('#token-form textarea', token);
    await page.click('#token-form button[type=submit]');
    await page.waitForSelector('body[data-ready=true]');
    expect(await page.textContent('#node-name')).toBe('stubby');
    await page.waitForSelector('#live.on');
    bus.publish({ PutPaymentSession: { payment_hash: HASH, payment_session: {} } });
    await page.click('nav button[data-view=payments]');
    const status = page.locator(`#payments-table tr[data-key="${HASH}"] .payment-status`);
    await status.waitFor();
    expect(await status.textContent()).toBe('Success');
    expect(errors).toEqual([]);
    await page.close();
  });
});
