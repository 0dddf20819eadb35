/**
 * The `cch:` section: fnn's names and defaults, and the refusal to run the `cch` service without
 * it. A node that does not run the service answers the cch methods as unknown (-32601).
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { resolveCchConfig } from '../../src/cch/config.ts';
import { loadConfig } from '../../src/node/config.ts';
import { runStrand, startNode, tempDir } from '../helpers/node-process.ts';

const SCRIPT = { code_hash: `0x${'11'.repeat(32)}`, hash_type: 'type', args: '0x01' };

function load(file: Record<string, unknown>, env: Record<string, string> = {}) {
  const dir = tempDir('strand-cch-config-');
  fs.writeFileSync(path.join(dir, 'config.yml'), YAML.stringify(file));
  return loadConfig({ dir, env });
}

describe('cch configuration', () => {
  it('has fnn’s defaults; CCH_ variables and the file set the fields', () => {
    const cfg = load(
      {
        services: ['fiber', 'rpc', 'cch'],
        cch: { wrapped_btc_type_script: SCRIPT, lnd_cert_path: 'tls.cert' },
      },
      { CCH_BASE_FEE_SATS: '5', CCH_LND_RPC_URL: 'https://lnd.example:10009' },
    );
    const c = resolveCchConfig(cfg.cch, cfg.baseDir);
    expect(c).toMatchObject({
      lndRpcUrl: 'https://lnd.example:10009',
      lndCertPath: `${cfg.baseDir}/cch/tls.cert`,
      wrappedBtcTypeScript: SCRIPT,
      orderExpiryDeltaSeconds: 129_600,
      baseFeeSats: 5n,
      feeRatePerMillionSats: 1n,
      btcFinalTlcExpiryDeltaBlocks: 180,
      ckbFinalTlcExpiryDeltaSeconds: 108_000,
      minOutgoingInvoiceExpiryDeltaSeconds: 21_600,
    });
  });

  it('takes the wrapped BTC script as JSON text too (fnn’s CCH_WRAPPED_BTC_TYPE_SCRIPT)', () => {
    const cfg = load({ services: ['cch', 'rpc'] }, { CCH_WRAPPED_BTC_TYPE_SCRIPT: JSON.stringify(SCRIPT) });
    expect(cfg.cch?.wrapped_btc_type_script).toEqual(SCRIPT);
  });

  it('writes the wrapped BTC script in lower case, as orders answer it (rpc/results.ts cchOrderRecord)', () => {
    const upper = { ...SCRIPT, code_hash: `0x${'AB'.repeat(32)}`, args: '0xC0FFEE' };
    const cfg = load({ services: ['cch', 'rpc'], cch: { wrapped_btc_type_script: upper } });
    expect(cfg.cch?.wrapped_btc_type_script).toEqual({
      code_hash: `0x${'ab'.repeat(32)}`,
      hash_type: 'type',
      args: '0xc0ffee',
    });
  });

  it('refuses the cch service without the section, or without the wrapped BTC script', () => {
    expect(() => load({ services: ['fiber', 'rpc', 'cch'] })).toThrow(
      /the cch service needs a `cch:` section: cch.lnd_rpc_url/,
    );
    expect(() => load({ services: ['cch'], cch: { lnd_rpc_url: 'https://x:1' } })).toThrow(
      /cch.wrapped_btc_type_script is required/,
    );
    expect(() =>
      load({ services: ['cch'], cch: { wrapped_btc_type_script: { ...SCRIPT, args: 'zz' } } }),
    ).toThrow(/cch.wrapped_btc_type_script.args/);
  });

  it('a node started with the cch service and no section exits with that message', async () => {
    const dir = tempDir('strand-cch-config-');
    fs.writeFileSync(path.join(dir, 'config.yml'), YAML.stringify({ services: ['rpc', 'cch'] }));
    const r = await runStrand(['node', '-d', dir]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/needs a `cch:` section/);
  });

  it('a hub whose LND certificate cannot be read does not start, naming the field and the file', async () => {
    const dir = tempDir('strand-cch-config-');
    const cch = {
      wrapped_btc_type_script: SCRIPT,
      lnd_cert_path: 'missing.cert',
      fiber_rpc_url: 'http://127.0.0.1:1',
    };
    fs.writeFileSync(path.join(dir, 'config.yml'), YAML.stringify({ services: ['rpc', 'cch'], cch }));
    const r = await runStrand(['cch', '-d', dir]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(`cch.lnd_cert_path: cannot read ${dir}/cch/missing.cert: ENOENT`);
  });

  it('a node without the cch service answers send_btc as an unknown method', async () => {
    const node = await startNode({ config: { services: ['rpc'], rpc: { listening_addr: '127.0.0.1:0' } } });
    try {
      const r = await node.call('send_btc', [{ btc_pay_req: 'x', currency: 'Fibd' }]);
      expect(r.error?.code).toBe(-32601);
    } finally {
      await node.stop();
    }
  });
});
