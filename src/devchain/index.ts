/**
 * The dev chain as one call, for `strand devnet` and tests: opens (or creates) the chain in `dir`,
 * serves its CKB JSON-RPC and produces blocks every `blockIntervalMs`.
 */
import { type DevAccount, DevChain, type DevChainOptions } from './chain.ts';
import { startDevchainRpc } from './rpc/server.ts';
import { DEFAULT_SPEC_TOML, STRAND_SPEC_TOML } from './setup.ts';

export { type DevAccount, DevChain, type DevChainOptions } from './chain.ts';
export { ChainTxError } from './errors.ts';
export { DEFAULT_SPEC_TOML, type DevScripts, STRAND_SPEC_TOML } from './setup.ts';

export interface RunningDevchain {
  chain: DevChain;
  /** JSON-RPC URL, e.g. `http://127.0.0.1:8114/`. */
  url: string;
  close(): Promise<void>;
}

export interface StartDevchainOptions extends Omit<DevChainOptions, 'accounts'> {
  accounts?: DevAccount[];
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 8114; 0 picks a free port. */
  port?: number;
  /** Default 1000; 0 = blocks only on demand (`generate_block`). */
  blockIntervalMs?: number;
  /** 'dev' (CKB's dev spec, the default) or 'strand' (scripts in genesis for reference nodes). */
  spec?: 'dev' | 'strand';
}

export async function startDevchain(opts: StartDevchainOptions): Promise<RunningDevchain> {
  const chain = DevChain.open({
    ...opts,
    specToml: opts.specToml ?? (opts.spec === 'strand' ? STRAND_SPEC_TOML : DEFAULT_SPEC_TOML),
  });
  let server: Awaited<ReturnType<typeof startDevchainRpc>>;
  try {
    server = await startDevchainRpc(chain, opts.host ?? '127.0.0.1', opts.port ?? 8114);
  } catch (e) {
    chain.close();
    throw e;
  }
  chain.startMining(opts.blockIntervalMs ?? 1000);
  return {
    chain,
    url: server.url,
    async close() {
      chain.stopMining();
      await server.close();
      chain.close();
    },
  };
}

export { devScriptsJson } from './rpc/json.ts';
export { startDevchainRpc } from './rpc/server.ts';
