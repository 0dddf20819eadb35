import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError, currencyOf, loadConfig } from '../../src/node/config.ts';
import { CONFIG_FIELDS, envNames, flagNames } from '../../src/node/config-fields.ts';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'strand-config-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

function writeConfig(text: string): string {
  const file = path.join(dir, 'config.yml');
  fs.writeFileSync(file, text);
  return file;
}

describe('configuration', () => {
  it('store: SQLite by default; store.url from file, STORE_URL or --store-url, only postgres://', () => {
    expect(loadConfig({ dir, env: {} }).store).toEqual({ lease_ms: 10_000 });
    writeConfig('store:\n  url: postgres://u:p@db:5432/n\n  lease_ms: 3000\n');
    expect(loadConfig({ dir, env: {} }).store).toEqual({ url: 'postgres://u:p@db:5432/n', lease_ms: 3000 });
    expect(loadConfig({ dir, env: { STORE_URL: 'postgresql://h/x' } }).store.url).toBe('postgresql://h/x');
    expect(loadConfig({ dir, env: {}, flags: { 'store-url': 'postgres://f/y' } }).store.url).toBe(
      'postgres://f/y',
    );
    expect(() => loadConfig({ dir, env: { STORE_URL: 'mysql://h/x' } })).toThrow(
      'invalid configuration: store.url: expected postgres://user:password@host:port/database',
    );
    writeConfig('store:\n  lease_ms: 0\n');
    expect(() => loadConfig({ dir, env: {} })).toThrow(
      'invalid configuration: store.lease_ms: must be at least 1',
    );
    writeConfig('store:\n  url: postgres://u:p@db:5432/n\n  timeout_ms: 30000\n');
    expect(loadConfig({ dir, env: {} }).store.timeout_ms).toBe(30_000);
    writeConfig('store:\n  timeout_ms: 0\n');
    expect(() => loadConfig({ dir, env: {} })).toThrow(
      'invalid configuration: store.timeout_ms: must be at least 1',
    );
  });

  it('has the defaults of the seed and fnn', () => {
    const c = loadConfig({ dir, env: {} });
    expect(c.rpc.listening_addr).toBe('127.0.0.1:8227');
    expect(c.rpc.enabled_modules).toEqual([
      'info',
      'peer',
      'channel',
      'payment',
      'invoice',
      'graph',
      'cch',
      'watchtower',
    ]);
    expect(c.rpc.cors_enabled).toBe(false);
    expect(c.fiber.open_channel_auto_accept_min_ckb_funding_amount).toBe(10_000_000_000n);
    expect(c.fiber.tlc_fee_proportional_millionths).toBe(1000n);
    expect(c.services).toEqual(['fiber', 'rpc', 'ckb']);
    expect(c.fiberDir).toBe(path.join(dir, 'fiber'));
    expect(c.ckbDir).toBe(path.join(dir, 'ckb'));
  });

  it('applies flag > env > file > default for every field kind', () => {
    const file = writeConfig(
      [
        'rpc:',
        '  listening_addr: 127.0.0.1:1000',
        '  cors_enabled: false',
        '  enabled_modules: [info]',
        'fiber:',
        '  tlc_fee_proportional_millionths: 5',
        '  announced_node_name: from-file',
      ].join('\n'),
    );
    const fileOnly = loadConfig({ dir, configFile: file, env: {} });
    expect(fileOnly.rpc.listening_addr).toBe('127.0.0.1:1000');
    expect(fileOnly.fiber.tlc_fee_proportional_millionths).toBe(5n);

    const env = {
      RPC_LISTENING_ADDR: '127.0.0.1:2000',
      RPC_CORS_ENABLED: 'true',
      RPC_ENABLED_MODULES: 'info,peer',
      FIBER_TLC_FEE_PROPORTIONAL_MILLIONTHS: '7',
    };
    const withEnv = loadConfig({ dir, configFile: file, env });
    expect(withEnv.rpc.listening_addr).toBe('127.0.0.1:2000');
    expect(withEnv.rpc.cors_enabled).toBe(true);
    expect(withEnv.rpc.enabled_modules).toEqual(['info', 'peer']);
    expect(withEnv.fiber.tlc_fee_proportional_millionths).toBe(7n);
    expect(withEnv.fiber.announced_node_name).toBe('from-file');

    const withFlags = loadConfig({
      dir,
      configFile: file,
      env,
      flags: {
        'rpc-listening-addr': '127.0.0.1:3000',
        'rpc-cors-enabled': 'false',
        'fiber-tlc-fee-proportional-millionths': '9',
      },
    });
    expect(withFlags.rpc.listening_addr).toBe('127.0.0.1:3000');
    expect(withFlags.rpc.cors_enabled).toBe(false);
    expect(withFlags.fiber.tlc_fee_proportional_millionths).toBe(9n);
    expect(withFlags.rpc.enabled_modules).toEqual(['info', 'peer']);
  });

  it("accepts the seed's auth key names and fnn's biscuit names", () => {
    const key = `ed25519/${'ab'.repeat(32)}`;
    expect(loadConfig({ dir, env: {}, flags: { 'rpc-auth-public-key': key } }).rpc.auth_public_key).toBe(key);
    expect(loadConfig({ dir, env: { RPC_BISCUIT_PUBLIC_KEY: key } }).rpc.auth_public_key).toBe(key);
    writeConfig(`rpc:\n  biscuit_public_key: ${key}\n`);
    expect(loadConfig({ dir, env: {} }).rpc.auth_public_key).toBe(key);
  });

  it('keeps amounts above 2^53 exact', () => {
    writeConfig('fiber:\n  auto_accept_channel_ckb_funding_amount: 18446744073709551615\n');
    expect(loadConfig({ dir, env: {} }).fiber.auto_accept_channel_ckb_funding_amount).toBe(
      18446744073709551615n,
    );
  });

  it.each([
    ['rpc:\n  listening_addr: nowhere\n', 'rpc.listening_addr'],
    ['rpc:\n  enabled_modules: [info, bogus]\n', 'rpc.enabled_modules.1'],
    ['rpc:\n  auth_public_key: secp/00\n', 'rpc.auth_public_key'],
    ['fiber:\n  tlc_min_value: -1\n', 'fiber.tlc_min_value'],
    ['fiber:\n  tlc_fee_proportional_millionths: 1000001\n', 'fiber.tlc_fee_proportional_millionths'],
    ['fiber:\n  tlc_min_value: 340282366920938463463374607431768211456\n', 'fiber.tlc_min_value'],
    [
      'fiber:\n  auto_accept_channel_ckb_funding_amount: 18446744073709551616\n',
      'fiber.auto_accept_channel_ckb_funding_amount',
    ],
    ['ckb:\n  rpc_url: not a url\n', 'ckb.rpc_url'],
    ['services: []\n', 'services'],
    ['rpc: [1, 2]\n', 'rpc'],
    [
      `ckb:\n  udt_whitelist:\n    - name: X\n      script: {code_hash: "0x${'e1'.repeat(32)}", hash_type: data2, args: "0x(" }\n`,
      'ckb.udt_whitelist[0].script.args',
    ],
  ])('names the bad field: %s', (text, field) => {
    writeConfig(text);
    expect(() => loadConfig({ dir, env: {} })).toThrow(ConfigError);
    expect(() => loadConfig({ dir, env: {} })).toThrow(`invalid configuration: ${field}:`);
  });

  it('names the limit of a gossiped fee', () => {
    writeConfig('fiber:\n  tlc_fee_proportional_millionths: 1000001\n');
    expect(() => loadConfig({ dir, env: {} })).toThrow(
      'fiber.tlc_fee_proportional_millionths: at most 1000000 (a fee of 100%)',
    );
  });

  it('accepts a UDT whitelist entry whose args are a pattern, as fnn writes them', () => {
    writeConfig(
      `ckb:\n  udt_whitelist:\n    - name: X\n      script: {code_hash: "0x${'e1'.repeat(32)}", hash_type: data2, args: "0x.*" }\n`,
    );
    expect(loadConfig({ dir, env: {} }).ckb.udt_whitelist[0]!.script.args).toBe('0x.*');
  });

  it('names the source of a bad env or flag value', () => {
    expect(() => loadConfig({ dir, env: { RPC_CORS_ENABLED: 'maybe' } })).toThrow(
      /rpc\.cors_enabled: environment variable RPC_CORS_ENABLED: expected true or false/,
    );
    expect(() => loadConfig({ dir, env: {}, flags: { 'fiber-tlc-min-value': 'ten' } })).toThrow(
      /fiber\.tlc_min_value: flag --fiber-tlc-min-value/,
    );
  });

  it('refuses broken YAML and a missing explicit file', () => {
    writeConfig('rpc: [unclosed\n');
    expect(() => loadConfig({ dir, env: {} })).toThrow(/not valid YAML/);
    expect(() => loadConfig({ dir, configFile: path.join(dir, 'none.yml'), env: {} })).toThrow(
      /does not exist/,
    );
  });

  it('derives an env variable and a flag for every field', () => {
    const envs = new Set<string>();
    for (const def of CONFIG_FIELDS) {
      for (const e of envNames(def)) {
        expect(envs.has(e)).toBe(false);
        envs.add(e);
      }
      expect(flagNames(def).length).toBeGreaterThan(0);
    }
    expect(envs.has('RPC_LISTENING_ADDR')).toBe(true);
    expect(envs.has('FIBER_TO_BE_ACCEPTED_CHANNELS_BYTESS_LIMIT')).toBe(true);
  });

  it('reads fiber.metrics_addr (FIBER_METRICS_ADDR, as fnn) and log_format; off and json by default', () => {
    const none = loadConfig({ dir, env: {} });
    expect(none.fiber.metrics_addr).toBeUndefined();
    expect(none.log_format).toBe('json');
    const set = loadConfig({
      dir,
      env: { FIBER_METRICS_ADDR: '127.0.0.1:9090', STRAND_LOG_FORMAT: 'pretty' },
    });
    expect(set.fiber.metrics_addr).toBe('127.0.0.1:9090');
    expect(set.log_format).toBe('pretty');
    expect(() => loadConfig({ dir, env: {}, flags: { 'fiber-metrics-addr': '9090' } })).toThrow(
      /invalid configuration: fiber\.metrics_addr: expected host:port/,
    );
    expect(() => loadConfig({ dir, env: {}, flags: { 'log-format': 'xml' } })).toThrow(
      /invalid configuration: log_format: expected json or pretty/,
    );
  });

  it('gives every field a help line and a section', () => {
    for (const def of CONFIG_FIELDS) {
      expect(def.help.length, def.path).toBeGreaterThan(10);
      expect(def.section.length, def.path).toBeGreaterThan(0);
    }
  });

  it('maps chains to invoice currencies', () => {
    expect(currencyOf('mainnet')).toBe('Fibb');
    expect(currencyOf('testnet')).toBe('Fibt');
    expect(currencyOf('/some/dev.toml')).toBe('Fibd');
  });
});
