/**
 * The JSON-RPC server through a real `strand node` process over HTTP: the envelope, modules,
 * CORS, the bind rule and start-up failures.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { identityFromSecret } from '../../src/crypto/identity.ts';
import { type NodeProcess, runStrand, startNode, tempDir } from '../helpers/node-process.ts';

const QUANTITY = /^0x(0|[1-9a-f][0-9a-f]*)$/;

describe('strand node: JSON-RPC over HTTP', () => {
  let node: NodeProcess;
  beforeAll(async () => {
    node = await startNode({
      config: {
        rpc: { listening_addr: '127.0.0.1:0', max_request_body_size: 4096 },
        fiber: { chain: 'dev', listening_addr: '/ip4/127.0.0.1/tcp/8238', announced_node_name: 'alice' },
      },
    });
  });
  afterAll(async () => {
    expect(await node.stop()).toBe(0);
  });

  it('answers node_info with every field of the seed, with real values', async () => {
    const { result } = await node.call('node_info');
    const id = identityFromSecret(new Uint8Array(fs.readFileSync(path.join(node.dir, 'fiber/sk'))));
    expect(result.pubkey).toBe(id.pubkeyHex);
    expect(result.addresses).toEqual([`/ip4/127.0.0.1/tcp/8238/p2p/${id.peerId}`]);
    expect(result.node_name).toBe('alice');
    expect(typeof result.version).toBe('string');
    expect(typeof result.commit_hash).toBe('string');
    expect(Array.isArray(result.features)).toBe(true);
    expect(result.chain_hash).toMatch(/^0x[0-9a-f]{64}$/);
    for (const k of [
      'open_channel_auto_accept_min_ckb_funding_amount',
      'auto_accept_channel_ckb_funding_amount',
      'tlc_expiry_delta',
      'tlc_min_value',
      'tlc_fee_proportional_millionths',
      'channel_count',
      'pending_channel_count',
      'peers_count',
    ]) {
      expect(result[k], k).toMatch(QUANTITY);
    }
    expect(result.tlc_fee_proportional_millionths).toBe('0x3e8');
    expect(result.default_funding_lock_script).toMatchObject({
      hash_type: 'type',
      code_hash: expect.stringMatching(/^0x[0-9a-f]{64}$/),
    });
    expect(result.default_funding_lock_script.args).toMatch(/^0x[0-9a-f]{40}$/);
    expect(result.udt_cfg_infos).toEqual([]);
  });

  it('echoes ids of every allowed type', async () => {
    for (const id of [7, 'abc', null]) {
      const r = await node.post(JSON.stringify({ jsonrpc: '2.0', id, method: 'node_info', params: [] }));
      expect(JSON.parse(r.text).id).toEqual(id);
    }
  });

  it.each([
    ['{not json', -32700, 'Parse error'],
    ['"just a string"', -32600, 'Invalid request'],
    ['{"jsonrpc":"1.0","id":1,"method":"node_info","params":[]}', -32600, 'jsonrpc must be "2.0"'],
    ['{"jsonrpc":"2.0","id":1,"params":[]}', -32600, 'method must be'],
    ['{"jsonrpc":"2.0","id":{"x":1},"method":"node_info"}', -32600, 'id must be'],
    ['[]', -32600, 'empty batch'],
    ['{"jsonrpc":"2.0","id":1,"method":"no_such_method","params":[]}', -32601, 'Method not found'],
    ['{"jsonrpc":"2.0","id":1,"method":"node_info","params":{"a":1}}', -32602, 'params must be an array'],
    [
      '{"jsonrpc":"2.0","id":1,"method":"node_info","params":[{"a":1}]}',
      -32602,
      'node_info takes no parameters',
    ],
    ['{"jsonrpc":"2.0","id":1,"method":"node_info","params":[{},{}]}', -32602, 'at most one object'],
  ])('envelope error for %s', async (body, code, text) => {
    const r = await node.post(body);
    expect(r.status).toBe(200);
    const reply = JSON.parse(r.text);
    expect(reply.error.code).toBe(code);
    expect(reply.error.message).toContain(text);
    expect(reply.result).toBeUndefined();
  });

  it('answers a batch in order, skipping notifications', async () => {
    const r = await node.post(
      JSON.stringify([
        { jsonrpc: '2.0', id: 1, method: 'node_info', params: [] },
        { jsonrpc: '2.0', method: 'node_info', params: [] },
        { jsonrpc: '2.0', id: 2, method: 'nope', params: [] },
        5,
      ]),
    );
    const replies = JSON.parse(r.text);
    expect(replies).toHaveLength(3);
    expect(replies[0].id).toBe(1);
    expect(replies[0].result.pubkey).toMatch(/^0[23]/);
    expect(replies[1]).toMatchObject({ id: 2, error: { code: -32601 } });
    expect(replies[2]).toMatchObject({ id: null, error: { code: -32600 } });
  });

  it('sends nothing back for a notification', async () => {
    const r = await node.post(JSON.stringify({ jsonrpc: '2.0', method: 'node_info', params: [] }));
    expect(r.status).toBe(204);
    expect(r.text).toBe('');
  });

  it('refuses a body over the size limit, a wrong content type and other verbs', async () => {
    const big = await node.post(
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'node_info', params: [], pad: 'x'.repeat(5000) }),
    );
    expect(big.status).toBe(413);
    expect(JSON.parse(big.text).error).toMatchObject({
      code: -32600,
      message: expect.stringContaining('exceeds the limit of 4096'),
    });
    const text = await node.post('{}', { 'content-type': 'text/plain' });
    expect(text.status).toBe(415);
    expect(JSON.parse(text.text).error.message).toContain('application/json');
    const get = await fetch(node.url);
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    const other = await fetch(`${node.url}/other`, {
      method: 'POST',
      body: '{}',
      headers: { 'content-type': 'application/json' },
    });
    expect(other.status).toBe(404);
  });

  it('adds no CORS headers when CORS is off', async () => {
    const r = await node.post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'node_info', params: [] }), {
      origin: 'http://app.example',
    });
    expect(r.headers.get('access-control-allow-origin')).toBeNull();
  });
});

describe('strand node: modules and CORS', () => {
  it('does not register the methods of a disabled module', async () => {
    const node = await startNode({
      config: { rpc: { listening_addr: '127.0.0.1:0', enabled_modules: ['peer'] } },
    });
    try {
      const r = await node.call('node_info');
      expect(r.error).toEqual({ code: -32601, message: 'Method not found' });
    } finally {
      await node.stop();
    }
  });

  it('answers preflight for allowed origins only', async () => {
    const node = await startNode({
      config: {
        rpc: {
          listening_addr: '127.0.0.1:0',
          cors_enabled: true,
          cors_allowed_origins: ['http://app.example'],
        },
      },
    });
    try {
      const ok = await fetch(node.url, {
        method: 'OPTIONS',
        headers: {
          origin: 'http://app.example',
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'content-type',
        },
      });
      expect(ok.status).toBe(204);
      expect(ok.headers.get('access-control-allow-origin')).toBe('http://app.example');
      expect(ok.headers.get('access-control-allow-methods')).toContain('POST');
      const bad = await fetch(node.url, { method: 'OPTIONS', headers: { origin: 'http://evil.example' } });
      expect(bad.headers.get('access-control-allow-origin')).toBeNull();
      const post = await node.post(
        JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'node_info', params: [] }),
        {
          origin: 'http://app.example',
        },
      );
      expect(post.headers.get('access-control-allow-origin')).toBe('http://app.example');
    } finally {
      await node.stop();
    }
  });

  it('allows any origin when the list is empty', async () => {
    const node = await startNode({ args: ['--rpc-cors-enabled'] });
    try {
      const r = await fetch(node.url, {
        method: 'OPTIONS',
        headers: { origin: 'http://x.example', 'access-control-request-method': 'POST' },
      });
      expect(r.status).toBe(204);
      expect(r.headers.get('access-control-allow-origin')).toBe('*');
    } finally {
      await node.stop();
    }
  });
});

describe('strand node: start-up failures', () => {
  it('refuses to listen on 0.0.0.0 or a public address without an auth key', async () => {
    for (const addr of ['0.0.0.0:0', '[::]:0', '8.8.8.8:0']) {
      const dir = tempDir();
      const r = await runStrand(['node', '-d', dir, '--rpc-listening-addr', addr], {
        FIBER_SECRET_KEY_PASSWORD: 'pw',
      });
      expect(r.code, addr).toBe(1);
      expect(r.stderr).toContain('without rpc.auth_public_key');
    }
  });

  it('stops on a bad config field, naming it', async () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 'config.yml'), 'rpc:\n  cors_enabled: perhaps\n');
    const r = await runStrand(['node', '-d', dir], { FIBER_SECRET_KEY_PASSWORD: 'pw' });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/invalid configuration: rpc\.cors_enabled/);
  });

  it('stops on a wrong or missing wallet password, leaving the key file as it was', async () => {
    const dir = tempDir();
    fs.mkdirSync(path.join(dir, 'ckb'));
    const keyFile = path.join(dir, 'ckb/key');
    fs.copyFileSync(path.join(import.meta.dirname, '../fixtures/fiber-test-nodes/1/ckb/key'), keyFile);
    const before = fs.readFileSync(keyFile);
    const wrong = await runStrand(['node', '-d', dir, '--rpc-listening-addr', '127.0.0.1:0'], {
      FIBER_SECRET_KEY_PASSWORD: 'nope',
    });
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain('wrong password');
    const missing = await runStrand(['node', '-d', dir, '--rpc-listening-addr', '127.0.0.1:0'], {
      FIBER_SECRET_KEY_PASSWORD: '',
    });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('FIBER_SECRET_KEY_PASSWORD is not set');
    expect(fs.readFileSync(keyFile)).toEqual(before);
  });
});
