/** `strand node -c <config.yml> -d <dir>`: runs one node (the shape of `fnn`). */
import type { Command } from 'commander';
import { ConfigError, loadConfig } from '../node/config.ts';
import { CONFIG_FIELDS, flagNames } from '../node/config-fields.ts';
import { StrandNode } from '../node/node.ts';
import { exitOnSignals } from './shutdown.ts';
import { defaultBaseDir, fail } from './util.ts';

export function registerNodeCommand(program: Command): void {
  const cmd = program
    .command('node')
    .description('run a node (config file, then environment variables, then flags; flags win)')
    .option('-c, --config <file>', 'config file (default <dir>/config.yml)')
    .option('-d, --dir <dir>', 'base directory (keys, store)', defaultBaseDir());
  // One flag per configuration field, derived from the field table.
  for (const def of CONFIG_FIELDS) {
    for (const name of flagNames(def)) {
      if (name === 'services') cmd.option('-s, --services <list>', 'services to run: fiber,rpc,ckb,cch');
      else if (def.kind === 'bool') cmd.option(`--${name} [bool]`, def.path);
      else cmd.option(`--${name} <value>`, def.path);
    }
  }
  cmd.action(async (opts: Record<string, unknown>) => {
    const flags: Record<string, string | boolean | undefined> = {};
    for (const def of CONFIG_FIELDS) {
      for (const name of flagNames(def)) {
        const v = opts[camel(name)];
        if (v !== undefined) flags[name] = v as string | boolean;
      }
    }
    let node: StrandNode;
    try {
      const config = loadConfig({
        dir: String(opts.dir),
        configFile: opts.config as string | undefined,
        flags,
      });
      node = await StrandNode.start(config);
    } catch (e) {
      if (e instanceof ConfigError) fail(e.message);
      fail(`cannot start: ${(e as Error).message}`);
    }
    exitOnSignals(node);
  });
}

function camel(flag: string): string {
  return flag.replace(/-([a-z0-9])/g, (_m, c: string) => c.toUpperCase());
}
