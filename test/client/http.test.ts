/**
 * The client's HTTP side against a real local HTTP server that answers what a node, a proxy or
 * nothing at all would: the request it sends (params, token), and how each kind of answer is
 * thrown.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, RpcError, RpcTransportError } from '../../src/client/index.ts';
import { RESULT_SCHEMAS } from '../../src/client/results.ts';

let server: http.Server;
let url: string;
/** What the server answers next: status and body. */
let answer: { status: number; body: string } | undefined;
let lastRequest: { authorization?: string; body: any } | undefined;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => {
      body += d;
    });
    req.on('end', () => {
      lastRequest = { authorization: req.headers.authorization, body: JSON.parse(body) };
      const a = answer ?? {
        status: 200,
        body: JSON.stringify({ jsonrpc: '2.0', id: lastRequest.body.id, result: lastRequest.body.params }),
      };
      res.writeHead(a.status, { 'content-type': 'application/json' }).end(a.body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

async function failure(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => expect.fail('resolved'),
    (e: unknown) => e,
  );
}

describe('requests', () => {
  it('sends params as the node reads them, and the token as a bearer header', async () => {
    answer = undefined;
    const client = createClient({ url, token: 'EoQBCho' });
    expect(await client.request('x', { a: 1 })).toEqual([{ a: 1 }]);
    expect(await client.request('x', ['0x1'])).toEqual(['0x1']);
    expect(await client.request('x')).toEqual([]);
    expect(await client.node_info()).toEqual([]);
    expect(lastRequest).toMatchObject({
      authorization: 'Bearer EoQBCho',
      body: { jsonrpc: '2.0', method: 'node_info', params: [] },
    });
    await createClient(url).list_peers();
    expect(lastRequest?.authorization).toBeUndefined();
    // WebSocket-only methods are reached through subscribeStoreChanges, not over HTTP.
    expect('subscribe_store_changes' in client).toBe(false);
    expect('unsubscribe_store_changes' in client).toBe(false);
  });
});

describe('failures', () => {
  it('throws the error object of a reply, even with an HTTP error status', async () => {
    answer = {
      status: 413,
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: null,
        error: { code: -32600, message: 'Invalid request: too large' },
      }),
    };
    const e = await failure(createClient(url).node_info());
    expect(e).toBeInstanceOf(RpcError);
    expect(e).toMatchObject({
      code: -32600,
      codeName: 'InvalidRequest',
      message: 'Invalid request: too large',
    });
  });

  it("names a refusal's code from error.data.error_code, none when data echoes the params", async () => {
    const refusal = (data: unknown) => ({
      status: 200,
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        error: { code: -32000, message: 'Messaging failed because channel is closed', data },
      }),
    });
    answer = refusal({ error_code: 'ChannelClosed' });
    const coded = (await failure(createClient(url).node_info())) as RpcError;
    expect([coded.code, coded.errorCode, coded.message]).toEqual([
      -32000,
      'ChannelClosed',
      'Messaging failed because channel is closed',
    ]);
    answer = refusal({ payment_hash: '0x01' });
    expect(((await failure(createClient(url).node_info())) as RpcError).errorCode).toBeUndefined();
  });

  it('throws RpcTransportError for what is no JSON-RPC reply', async () => {
    answer = { status: 502, body: '<html>bad gateway</html>' };
    const e = await failure(createClient(url).node_info());
    expect(e).toBeInstanceOf(RpcTransportError);
    expect(e).toMatchObject({ status: 502, message: expect.stringContaining('bad gateway') });

    for (const body of [JSON.stringify({ jsonrpc: '2.0', id: 1 }), 'null', '"ok"']) {
      answer = { status: 200, body };
      expect(await failure(createClient(url).node_info()), body).toBeInstanceOf(RpcTransportError);
    }
  });

  it('throws RpcTransportError when nothing listens', async () => {
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const e = await failure(createClient(`http://127.0.0.1:${port}`).node_info());
    expect(e).toBeInstanceOf(RpcTransportError);
    expect((e as Error).message).toContain('cannot reach');
    const sub = await failure(createClient(`http://127.0.0.1:${port}`).subscribeStoreChanges());
    expect(sub).toBeInstanceOf(RpcTransportError);
  });
});

describe('result checks', () => {
  it('passes a reply through unchecked by default, and refuses one off its schema when asked', async () => {
    answer = {
      status: 200,
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, result: { peers: [{ pubkey: 1 }] } }),
    };
    expect(await createClient(url).list_peers()).toEqual({ peers: [{ pubkey: 1 }] });
    const checked = createClient({ url, resultSchemas: RESULT_SCHEMAS });
    const e = await failure(checked.list_peers());
    expect(e).toBeInstanceOf(RpcTransportError);
    expect((e as Error).message).toMatch(/^list_peers: the reply does not match the declared result/);

    const peer = {
      pubkey: `02${'ab'.repeat(32)}`,
      peer_id: `Qm${'a'.repeat(44)}`,
      address: '/ip4/127.0.0.1/tcp/1',
    };
    answer = { status: 200, body: JSON.stringify({ jsonrpc: '2.0', id: 1, result: { peers: [peer] } }) };
    expect(await checked.list_peers()).toEqual({ peers: [peer] });
    // A method without a schema (unknown to this client) passes as is.
    answer = { status: 200, body: JSON.stringify({ jsonrpc: '2.0', id: 1, result: 'x' }) };
    expect(await checked.request('rpc.discover')).toBe('x');
  });
});
