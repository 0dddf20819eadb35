/** `network` (flag `--network`, env `STRAND_NETWORK`): the preset it selects, and what it refuses. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/node/config.ts';

const dir = () => fs.mkdtempSync(path.join(os.tmpdir(), 'strand-cfg-net-'));
const load = (flags: Record<string, string>, file?: string, env: Record<string, string> = {}) => {
  const d = dir();
  if (file) fs.writeFileSync(path.join(d, 'config.yml'), file);
  return loadConfig({ dir: d, env, flags });
};
const refusal = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as Error).message;
  }
  throw new Error('accepted');
};

describe('network presets in the configuration', () => {
  it('--network testnet: chain testnet, fnn testnet RPC URL and UDT whitelist', () => {
    const c = load({ network: 'testnet' });
    expect(c.network).toBe('testnet');
    expect(c.fiber.chain).toBe('testnet');
    expect(c.ckb.rpc_url).toBe('https://testnet.ckbapp.dev/');
    expect(c.ckb.udt_whitelist.map((u) => [u.name, u.auto_accept_amount])).toEqual([
      ['RUSD', 1_000_000_000n],
    ]);
  });

  it('what the configuration sets wins over the preset', () => {
    const c = load(
      { network: 'testnet', 'ckb-rpc-url': 'http://10.0.0.5:8114' },
      'ckb:\n  udt_whitelist: []\n',
    );
    expect(c.ckb.rpc_url).toBe('http://10.0.0.5:8114');
    expect(c.ckb.udt_whitelist).toEqual([]);
  });

  it('without network, fiber.chain names it (fnn files keep working); the default is dev', () => {
    expect(load({}, 'fiber:\n  chain: mainnet\n').network).toBe('mainnet');
    expect(load({}, 'fiber:\n  chain: mainnet\n').ckb.rpc_url).toBe('http://127.0.0.1:8114/');
    const dev = load({});
    expect([dev.network, dev.fiber.chain, dev.ckb.rpc_url, dev.ckb.udt_whitelist]).toEqual([
      'dev',
      'dev',
      'http://127.0.0.1:8114',
      [],
    ]);
    expect(load({}, undefined, { STRAND_NETWORK: 'mainnet' }).fiber.chain).toBe('mainnet');
  });

  it('refuses an unknown network and a fiber.chain that says another one', () => {
    expect(refusal(() => load({ network: 'devnet' }))).toMatch(/^invalid configuration: network: /);
    expect(refusal(() => load({ network: 'testnet', 'fiber-chain': 'mainnet' }))).toBe(
      "invalid configuration: fiber.chain: 'mainnet' is not the testnet network that network names",
    );
    expect(refusal(() => load({ network: 'mainnet' }, 'fiber:\n  chain: dev\n'))).toMatch(
      /fiber\.chain: 'dev'/,
    );
  });

  it('reads fiber.scripts at start, naming a bad entry', () => {
    expect(
      refusal(() =>
        load({ network: 'testnet' }, 'fiber:\n  scripts:\n    - name: Funding\n      cell_deps: []\n'),
      ),
    ).toBe(
      'invalid configuration: fiber.scripts[0].name: expected FundingLock or CommitmentLock, got "Funding"',
    );
    const c = load(
      {},
      [
        'fiber:',
        '  scripts:',
        '    - name: FundingLock',
        '      script: { code_hash: "0x' + 'ab'.repeat(32) + '", hash_type: type, args: "0x" }',
        '      cell_deps:',
        '        - cell_dep: { out_point: { tx_hash: "0x' +
          'cd'.repeat(32) +
          '", index: "0x0" }, dep_type: code }',
        '',
      ].join('\n'),
    );
    expect(c.fiber.scripts).toHaveLength(1);
    // As fnn: the whole list as JSON in FIBER_SCRIPTS, checked the same way.
    expect(refusal(() => load({}, undefined, { FIBER_SCRIPTS: '[{"name":"CkbAuth"}]' }))).toBe(
      'invalid configuration: fiber.scripts[0].name: expected FundingLock or CommitmentLock, got "CkbAuth"',
    );
  });
});
