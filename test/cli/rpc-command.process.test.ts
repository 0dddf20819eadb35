/**
 * `strand rpc` through the real binary against a real node: the method list and help read from
 * docs/openrpc.json, flag-style and JSON params, errors, `--get`, and the bash completion.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPENRPC_JSON } from '../../tools/docs-rpc.ts';
import { type NodeProcess, runStrand, startNode, tempDir } from '../helpers/node-process.ts';

const REPO = path.resolve(import.meta.dirname, '../..');

let node: NodeProcess;
const rpc = (...args: string[]) => runStrand(['rpc', '--url', node.url, ...args]);

beforeAll(async () => {
  node = await startNode();
}, 60_000);

afterAll(async () => {
  await node?.stop();
});

describe('strand rpc', () => {
  it('lists every method of the document, by module', async () => {
    const r = await runStrand(['rpc', '--list']);
    expect(r.code).toBe(0);
    const doc = JSON.parse(fs.readFileSync(OPENRPC_JSON, 'utf8')) as { methods: { name: string }[] };
    for (const m of doc.methods)
      expect(r.stdout).toMatch(new RegExp(`^  ${m.name.replace('.', '\\.')} `, 'm'));
    expect(r.stdout).toMatch(/^channel:$/m);
  });

  it("shows a method's params as flags, the required ones marked, and its result", async () => {
    const r = await runStrand(['rpc', 'open_channel', '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/--funding-amount\s+hex quantity \(required\): What this side funds/);
    expect(r.stdout).toMatch(/--public\s+boolean: Announce the channel/);
    expect(r.stdout).toMatch(/temporary_channel_id: hash/);
    const unknown = await runStrand(['rpc', 'no_such_method', '--help']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/not in the OpenRPC document/);
  });

  it('sends flag-style params, merged over a JSON object, and reads one field with --get', async () => {
    const made = await rpc(
      'new_invoice',
      '{"amount":"0x64","currency":"Fibd"}',
      '--description',
      'flag style',
      '--allow-mpp',
      '--get',
      'invoice.data.payment_hash',
    );
    expect(made.stderr).toBe('');
    const hash = made.stdout.trim();
    expect(hash).toMatch(/^0x[0-9a-f]{64}$/);
    const got = await rpc('get_invoice', '--payment-hash', hash);
    expect(got.code).toBe(0);
    const stored = JSON.parse(got.stdout);
    expect(stored.status).toBe('Open');
    expect(stored.invoice.data.attrs).toContainEqual({ Description: 'flag style' });
    expect(stored.invoice.data.attrs).toContainEqual({ Feature: ['BASIC_MPP_OPTIONAL'] });
    const noMpp = await rpc('new_invoice', '--amount=0x64', '--currency', 'Fibd', '--no-allow-mpp');
    expect(JSON.parse(noMpp.stdout).invoice.data.attrs).toContainEqual({ Feature: [] });
  });

  it("reports the node's refusal on stderr with exit 1, and a bad flag with exit 2 before any call", async () => {
    const bad = await rpc('new_invoice', '--amount', '12', '--currency', 'Fibd');
    expect(bad.code).toBe(1);
    const error = JSON.parse(bad.stderr);
    expect(error.code).toBe(-32602);
    expect(error.message).toMatch(/amount/);
    const unknownFlag = await rpc('new_invoice', '--amount', '0x1', '--ammount', '0x2');
    expect(unknownFlag.code).toBe(2);
    expect(unknownFlag.stderr).toMatch(/unknown param --ammount for new_invoice/);
    const notBool = await rpc('new_invoice', '--allow-mpp', 'maybe');
    expect(notBool.code).toBe(2);
    expect(notBool.stderr).toMatch(/--allow-mpp: expected true or false/);
    const missingValue = await rpc('get_invoice', '--payment-hash');
    expect(missingValue.code).toBe(2);
  });

  it('finds a devnet node by name in <dir>/devnet.json', async () => {
    const dir = tempDir('strand-rpc-devnet-');
    fs.writeFileSync(
      path.join(dir, 'devnet.json'),
      JSON.stringify({ nodes: [{ name: 'alice', rpc_url: node.url }] }),
    );
    const r = await runStrand(['rpc', '--node', 'alice', '-d', dir, 'node_info', '--get', 'pubkey']);
    expect(r.stdout.trim()).toBe((await node.call('node_info')).result.pubkey);
    const missing = await runStrand(['rpc', '--node', 'carol', '-d', dir, 'node_info']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/no devnet node named 'carol'/);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('answers a method the node does not serve with its JSON-RPC error', async () => {
    const r = await rpc('no_such_method');
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stderr).code).toBe(-32601);
  });

  it('prints a bash completion that completes method names and their flags', async () => {
    const script = await runStrand(['rpc', 'completion', 'bash']);
    expect(script.code).toBe(0);
    const complete = (words: string[]) => {
      const probe = `${script.stdout}\nCOMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${
        words.length - 1
      }; _strand_rpc; echo "\${COMPREPLY[@]}"`;
      return spawnSync('bash', ['-c', probe], { encoding: 'utf8' }).stdout.trim();
    };
    expect(complete(['strand', 'rpc', 'open_ch'])).toBe('open_channel open_channel_with_external_funding');
    expect(complete(['strand', 'rpc', '--node', 'bob', 'open_channel', '--funding-a'])).toBe(
      '--funding-amount',
    );
    const zsh = await runStrand(['rpc', 'completion', 'zsh']);
    expect(zsh.stdout).toMatch(/bashcompinit/);
  });

  it('needs neither tsx nor any TypeScript file nor a package to run', () => {
    // Copied alone (no node_modules, no src/**/*.ts): a call path that loaded tsx or the node
    // would fail here.
    const root = tempDir('strand-rpc-alone-');
    const copy = (rel: string) => {
      fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
      fs.copyFileSync(path.join(REPO, rel), path.join(root, rel));
    };
    for (const rel of ['bin/strand.js', 'bin/check-node.js', 'src/cli/rpc-command.js', 'docs/openrpc.json'])
      copy(rel);
    // The Node.js version check reads `engines` (and passes here).
    fs.writeFileSync(path.join(root, 'package.json'), '{"type":"module","engines":{"node":">=20.19.0"}}');
    const r = spawnSync(
      process.execPath,
      [path.join(root, 'bin/strand.js'), 'rpc', 'node_info', '--url', node.url],
      {
        encoding: 'utf8',
      },
    );
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout).version).toMatch(/^\d+\.\d+/);
    fs.rmSync(root, { recursive: true, force: true });
  });
});
