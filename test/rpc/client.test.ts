/**
 * The JSON-RPC client over real sockets: results and errors, one kept-alive connection for calls
 * in sequence, a reused socket the server resets sent again on a fresh one, and the timeout.
 */
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createRpcClient, RpcCallError } from '../../src/rpc/client.ts';

const servers: { srv: net.Server; connections: net.Socket[] }[] = [];
afterEach(async () => {
  for (const { srv, connections } of servers.splice(0)) {
    for (const c of connections) c.destroy(); // the client's idle kept-alive socket
    await new Promise((r) => srv.close(r));
  }
});

/**
 * A raw HTTP/1.1 server: each request on a connection is answered by `reply(n)` (its number on
 * that connection, from 1): a JSON text, `'reset'` (the socket is reset unanswered) or `'hang'`.
 */
async function server(reply: (n: number) => string) {
  const connections: net.Socket[] = [];
  const srv = net.createServer((sock) => {
    connections.push(sock);
    let buf = '';
    let n = 0;
    sock.on('error', () => {});
    sock.on('data', (d) => {
      buf += d.toString();
      for (;;) {
        const head = buf.indexOf('\r\n\r\n');
        if (head < 0) return;
        const len = Number(/content-length: (\d+)/i.exec(buf.slice(0, head))?.[1] ?? 0);
        if (buf.length < head + 4 + len) return;
        buf = buf.slice(head + 4 + len);
        const r = reply(++n);
        if (r === 'reset') return sock.resetAndDestroy();
        if (r === 'hang') return;
        sock.write(
          `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(r)}\r\n` +
            `connection: keep-alive\r\n\r\n${r}`,
        );
      }
    });
  });
  servers.push({ srv, connections });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as net.AddressInfo;
  return { url: `http://127.0.0.1:${port}/`, connections };
}

const ok = (result: unknown) => JSON.stringify({ jsonrpc: '2.0', id: 1, result });

describe('rpc client', () => {
  it('returns results, keeps one connection for calls in sequence, and raises RPC errors', async () => {
    let calls = 0;
    const s = await server(() => {
      calls++;
      return calls === 3
        ? JSON.stringify({ jsonrpc: '2.0', id: 3, error: { code: -32602, message: 'bad amount', data: 'x' } })
        : ok({ n: calls });
    });
    const c = createRpcClient(s.url);
    expect(await c.call('node_info')).toEqual({ n: 1 });
    expect(await c.call('node_info', { a: 1 })).toEqual({ n: 2 });
    const err = await c.call('send_payment').catch((e) => e);
    expect(err).toBeInstanceOf(RpcCallError);
    expect([err.code, err.message, err.data]).toEqual([-32602, 'bad amount', 'x']);
    expect(s.connections.length).toBe(1);
  });

  it('says what came back when the answer is not JSON', async () => {
    const s = await server(() => 'not json');
    const err = await createRpcClient(s.url)
      .call('node_info')
      .catch((e) => e);
    expect(err).toBeInstanceOf(RpcCallError);
    expect(err.code).toBe(-32700);
    expect(err.message).toBe('HTTP 200: not json');
  });

  it('sends a call again on a fresh socket when the kept-alive one is reset under it', async () => {
    // The second request on a connection is reset unanswered, as by a server closing it idle.
    const s = await server((n) => (n === 2 ? 'reset' : ok({ n })));
    const c = createRpcClient(s.url);
    expect(await c.call('node_info')).toEqual({ n: 1 });
    expect(await c.call('node_info')).toEqual({ n: 1 });
    expect(s.connections.length).toBe(2);
  });

  it('does not send again when a fresh socket is reset', async () => {
    const s = await server(() => 'reset');
    const err = await createRpcClient(s.url)
      .call('node_info')
      .catch((e) => e);
    expect(err.code).toBe('ECONNRESET');
    expect(s.connections.length).toBe(1);
  });

  it('gives up after its timeout', async () => {
    const s = await server(() => 'hang');
    const err = await createRpcClient(s.url, undefined, 100)
      .call('node_info')
      .catch((e) => e);
    expect(err.message).toMatch(/timed out after 100 ms/);
  });
});
