/**
 * The `strand` command. Each subcommand lives in its own file and adds itself to the program
 * with a `register…Command(program)` function.
 */
import { Command } from 'commander';
import { registerCchCommand } from './cch.ts';
import { registerDevchainCommand } from './devchain.ts';
import { registerDevnetCommand } from './devnet.ts';
import { registerKeysCommand } from './keys.ts';
import { registerNodeCommand } from './node.ts';
import { registerRpcCommand } from './rpc.ts';
import { registerStoreCommand } from './store.ts';
import { registerTokenCommand } from './token.ts';
import { registerWatchtowerCommand } from './watchtower.ts';

export async function main(argv: string[]): Promise<void> {
  const program = new Command('strand')
    .description('Strand: a payment-channel network node (Fiber compatible)')
    .showHelpAfterError();
  registerNodeCommand(program);
  registerKeysCommand(program);
  registerTokenCommand(program);
  registerDevchainCommand(program);
  registerDevnetCommand(program);
  registerRpcCommand(program);
  registerWatchtowerCommand(program);
  registerCchCommand(program);
  registerStoreCommand(program);
  await program.parseAsync(argv);
}
