/**
 * `strand rpc`, as `strand --help` lists it. bin/strand.js runs `rpc-command.js` directly,
 * before tsx loads; this entry serves callers of `main()` that come through here.
 */
import type { Command } from 'commander';

export function registerRpcCommand(program: Command): void {
  program
    .command('rpc')
    .description(
      "call a node: strand rpc node_info; strand rpc --node bob list_channels '{}'; strand rpc --list; strand rpc <method> --help",
    )
    .helpOption(false)
    .allowUnknownOption()
    .allowExcessArguments()
    .argument('[args...]')
    .action(async (args: string[]) => {
      // A computed specifier: the plain-JS module carries JSDoc types, not a declaration file.
      const file = './rpc-command.js';
      const { rpcCommand } = (await import(file)) as { rpcCommand(argv: string[]): Promise<number> };
      process.exitCode = await rpcCommand(args);
    });
}
