/**
 * The authorisation matrix, through a real node with `rpc.auth_public_key` set: for every method
 * of the permission table, no token / a forged token / a token lacking the permission are refused
 * with -32999, and a least-privilege token holding the permission gets past authorisation.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { generateKeyPair, mintToken } from '../../src/rpc/auth.ts';
import { loadBiscuit } from '../../src/rpc/biscuit.ts';
import { MODULE_NAMES } from '../../src/rpc/method.ts';
import { PERMISSIONS, permissionFact } from '../../src/rpc/permissions.ts';
import { type NodeProcess, runStrand, startNode } from '../helpers/node-process.ts';

const METHODS = Object.keys(PERMISSIONS);
const ALL_FACTS = [...new Set(Object.values(PERMISSIONS).map(permissionFact))];
const CALLER = 'QmbvRjJHAQDmj3cgnUBGQ5zVnGxUKwb2qJygwNs2wk41h8';

let node: NodeProcess;
let root: { privateKey: string; publicKey: string };
let revokedToken: string;

async function revocationIds(token: string, publicKey: string): Promise<string[]> {
  const b = await loadBiscuit();
  const pk = b.PublicKey.fromString(publicKey.slice('ed25519/'.length), b.SignatureAlgorithm.Ed25519);
  return (b.Biscuit.fromBase64(token, pk).getRevocationIdentifiers() as unknown[]).map(String);
}

/** Calls every method of the table in one batch; returns the error code per method (0 = result). */
async function codesFor(token: string | undefined): Promise<Record<string, number>> {
  // Params chosen so that a call which passes authorisation stops at validation instead of
  // working for real (a 10 s profile, a backup): only the authorisation outcome matters here.
  const params = [{ duration_secs: '0x0', path: 'relative/path' }];
  const batch = METHODS.map((method, i) => ({ jsonrpc: '2.0', id: i, method, params }));
  const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  const replies = JSON.parse((await node.post(JSON.stringify(batch), headers)).text) as {
    id: number;
    error?: { code: number };
  }[];
  return Object.fromEntries(replies.map((r) => [METHODS[r.id]!, r.error?.code ?? 0]));
}

beforeAll(async () => {
  root = await generateKeyPair();
  revokedToken = await mintToken(root.privateKey, { facts: ['read("node")'] });
  node = await startNode({
    config: {
      rpc: {
        listening_addr: '127.0.0.1:0',
        auth_public_key: root.publicKey,
        auth_revoked_ids: await revocationIds(revokedToken, root.publicKey),
        enabled_modules: [...MODULE_NAMES],
      },
    },
  });
});
afterAll(async () => {
  await node.stop();
});

describe('auth matrix over every method of the permission table', () => {
  it('refuses calls without a token', async () => {
    const codes = await codesFor(undefined);
    for (const m of METHODS) expect(codes[m], m).toBe(-32999);
  });

  it('refuses a token signed by another key', async () => {
    const other = await generateKeyPair();
    const forged = await mintToken(other.privateKey, { facts: [...ALL_FACTS, `node("${CALLER}")`] });
    const codes = await codesFor(forged);
    for (const m of METHODS) expect(codes[m], m).toBe(-32999);
  });

  it('refuses garbage in the Authorization header', async () => {
    for (const header of ['Bearer', 'Bearer !!!', 'Basic abc', `Bearer ${'A'.repeat(300)}`]) {
      const r = await node.call('node_info', [], { authorization: header });
      expect(r.error, header).toEqual({ code: -32999, message: 'Unauthorized' });
    }
  });

  it('refuses a token lacking the permission, and passes one that holds exactly it', async () => {
    for (const fact of ALL_FACTS) {
      const methods = METHODS.filter((m) => permissionFact(PERMISSIONS[m]!) === fact);
      const identity = `node("${CALLER}")`;
      const lacking = await mintToken(root.privateKey, {
        facts: [...ALL_FACTS.filter((f) => f !== fact), identity],
      });
      const holding = await mintToken(root.privateKey, { facts: [fact, identity] });
      const refused = await codesFor(lacking);
      const granted = await codesFor(holding);
      for (const m of methods) {
        expect(refused[m], `${m} without ${fact}`).toBe(-32999);
        expect(granted[m], `${m} with ${fact}`).not.toBe(-32999);
      }
    }
  });

  it('requires a node() identity for watchtower methods', async () => {
    const token = await mintToken(root.privateKey, { facts: ['write("watchtower")'] });
    const codes = await codesFor(token);
    for (const m of METHODS.filter((x) => PERMISSIONS[x]!.needsNodeIdentity))
      expect(codes[m], m).toBe(-32999);
  });

  it('write does not imply read', async () => {
    const token = await mintToken(root.privateKey, { facts: ['write("node")'] });
    expect((await node.call('node_info', [], { authorization: `Bearer ${token}` })).error?.code).toBe(-32999);
  });

  it('refuses expired and revoked tokens, accepts unexpired ones', async () => {
    const expired = await mintToken(root.privateKey, {
      facts: ['read("node")'],
      expires: new Date(Date.now() - 60_000),
    });
    const fresh = await mintToken(root.privateKey, {
      facts: ['read("node")'],
      expires: new Date(Date.now() + 3_600_000),
    });
    expect((await node.call('node_info', [], { authorization: `Bearer ${expired}` })).error?.code).toBe(
      -32999,
    );
    expect((await node.call('node_info', [], { authorization: `Bearer ${revokedToken}` })).error?.code).toBe(
      -32999,
    );
    expect((await node.call('node_info', [], { authorization: `Bearer ${fresh}` })).result.pubkey).toMatch(
      /^0[23]/,
    );
  });

  it('says Unauthorized, not Method not found, to a caller without a valid token', async () => {
    expect((await node.call('no_such_method')).error?.code).toBe(-32999);
    const token = await mintToken(root.privateKey, { facts: ['read("node")'] });
    expect((await node.call('no_such_method', [], { authorization: `Bearer ${token}` })).error?.code).toBe(
      -32601,
    );
  });

  it('applies the same rules over WebSocket', async () => {
    const token = await mintToken(root.privateKey, { facts: ['read("node")'] });
    const ask = (headers: Record<string, string>) =>
      new Promise<{ result?: { pubkey: string }; error?: { code: number } }>((resolve, reject) => {
        const ws = new WebSocket(node.url.replace('http', 'ws'), { headers });
        ws.on('open', () =>
          ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'node_info', params: [] })),
        );
        ws.on('message', (data) => {
          resolve(JSON.parse(data.toString()));
          ws.close();
        });
        ws.on('error', reject);
      });
    expect((await ask({})).error?.code).toBe(-32999);
    expect((await ask({ authorization: `Bearer ${token}` })).result?.pubkey).toMatch(/^0[23]/);
  });

  it('works with keys and tokens made by the strand token command', async () => {
    const keygen = await runStrand(['token', 'keygen']);
    expect(keygen.code).toBe(0);
    const priv = /private_key: (\S+)/.exec(keygen.stdout)![1]!;
    expect(keygen.stdout).toMatch(/public_key: ed25519\/[0-9a-f]{64}/);
    const mint = await runStrand(['token', 'mint', '--private-key', priv, '--permission', 'read("node")']);
    expect(mint.code).toBe(0);
    expect(mint.stdout.trim()).toMatch(/^[A-Za-z0-9_=-]+$/);
    const bad = await runStrand([
      'token',
      'mint',
      '--private-key',
      priv,
      '--permission',
      'read("everything")',
    ]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('unknown permission');
  });
});
