/**
 * `strand cch -c <config.yml> -d <dir>`: the cross-chain hub as a separate service, as fnn v0.8
 * runs it with `cch.fiber_rpc_url`: it follows that Fiber node over JSON-RPC and the WebSocket
 * `subscribe_store_changes` (the node must enable the `pubsub` module), keeps its orders in its
 * own store under `<dir>`, and serves `send_btc`, `receive_btc`, `get_cch_order` on its RPC
 * address. The same as `strand node` with `services: [cch, rpc]`.
 */
import type { Command } from 'commander';
import { ConfigError, loadConfig, StrandNode } from '../node/index.ts';
import { exitOnSignals } from './shutdown.ts';
import { defaultBaseDir, fail } from './util.ts';

export function registerCchCommand(program: Command): void {
  program
    .command('cch')
    .description('run the cross-chain hub as a separate service following a node (cch.fiber_rpc_url)')
    .option('-c, --config <file>', 'config file (default <dir>/config.yml)')
    .option('-d, --dir <dir>', 'base directory (the hub’s store)', defaultBaseDir())
    .action(async (opts: { config?: string; dir: string }) => {
      let node: StrandNode;
      try {
        const config = loadConfig({ dir: String(opts.dir), configFile: opts.config, flags: {} });
        if (!config.cch?.fiber_rpc_url)
          throw new ConfigError(
            'invalid configuration: cch.fiber_rpc_url is required: the http(s)://host:port of the Fiber node the hub follows',
          );
        config.services = ['cch', 'rpc'];
        config.rpc.enabled_modules = ['info', 'cch'];
        node = await StrandNode.start(config);
      } catch (e) {
        if (e instanceof ConfigError) fail(e.message);
        fail(`cannot start: ${(e as Error).message}`);
      }
      exitOnSignals(node);
    });
}
