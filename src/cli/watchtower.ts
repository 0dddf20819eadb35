/**
 * `strand watchtower -c <config.yml> -d <dir>`: a standalone watchtower — the node's chain
 * client, wallet (it pays the fees of what it sends) and RPC server with the `watchtower`
 * module, and nothing else: no peers, no channels. Nodes feed it over RPC
 * (`fiber.standalone_watchtower_rpc_url`); it keeps their data per caller node id.
 */
import type { Command } from 'commander';
import { ConfigError, loadConfig, StrandNode } from '../node/index.ts';
import { exitOnSignals } from './shutdown.ts';
import { defaultBaseDir, fail } from './util.ts';

export function registerWatchtowerCommand(program: Command): void {
  program
    .command('watchtower')
    .description('run a standalone watchtower (chain + RPC watchtower module; no peers, no channels)')
    .option('-c, --config <file>', 'config file (default <dir>/config.yml)')
    .option('-d, --dir <dir>', 'base directory (wallet key, store)', defaultBaseDir())
    .option('--network <name>', 'testnet, mainnet or dev: the chain preset (docs/chain.md)')
    .action(async (opts: { config?: string; dir: string; network?: string }) => {
      let node: StrandNode;
      try {
        const config = loadConfig({
          dir: String(opts.dir),
          configFile: opts.config,
          flags: { network: opts.network },
        });
        config.services = ['ckb', 'rpc'];
        config.rpc.enabled_modules = [
          ...new Set([...config.rpc.enabled_modules, 'info' as const, 'watchtower' as const]),
        ];
        config.fiber.disable_built_in_watchtower = false;
        config.fiber.standalone_watchtower_rpc_url = undefined;
        node = await StrandNode.start(config);
      } catch (e) {
        if (e instanceof ConfigError) fail(e.message);
        fail(`cannot start: ${(e as Error).message}`);
      }
      exitOnSignals(node);
    });
}
