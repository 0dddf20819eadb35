/** `strand node -c <config.yml> -d <dir>`: runs one node (the shape of `fnn`). */
import { type Command, Option } from 'commander';
import {
  applyHeapGrowth,
  CONFIG_FIELDS,
  ConfigError,
  flagNames,
  loadConfig,
  StrandNode,
} from '../node/index.ts';
import { exitOnSignals } from './shutdown.ts';
import { defaultBaseDir, fail } from './util.ts';

export function registerNodeCommand(program: Command): void {
  const cmd = program
    .command('node')
    .description('run a node (config file, then environment variables, then flags; flags win)')
    .option('-c, --config <file>', 'config file (default <dir>/config.yml)')
    .option('-d, --dir <dir>', 'base directory (keys, store)', defaultBaseDir())
    .addHelpText(
      'after',
      '\nEach option above is also a field of the config file and an environment variable:\n' +
        '  --fiber-tlc-min-value <v>  ↔  fiber: { tlc_min_value: v }  ↔  FIBER_TLC_MIN_VALUE=v\n' +
        'Lists are comma-separated on flags and in the environment; structured values are JSON.\n' +
        'The wallet key password is read from FIBER_SECRET_KEY_PASSWORD.',
    );
  // One flag per configuration field, derived from the field table, listed under its section.
  for (const def of CONFIG_FIELDS) {
    const [main, ...aliases] = flagNames(def);
    const short = main === 'services' ? '-s, ' : '';
    const arg = def.kind === 'bool' ? '[bool]' : def.kind === 'list' ? '<list>' : '<value>';
    // The file key and environment variable derive from the flag (see the text after the list);
    // only fnn's irregular variable names are spelled out.
    const env = def.env ? ` [env ${def.env.join(', ')}]` : '';
    cmd.addOption(new Option(`${short}--${main} ${arg}`, `${def.help}${env}`).helpGroup(`${def.section}:`));
    // fnn's older spellings are accepted, not listed.
    for (const alias of aliases) cmd.addOption(new Option(`--${alias} ${arg}`).hideHelp());
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
      applyHeapGrowth(config.heap_growth_percent);
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
