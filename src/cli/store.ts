/**
 * `strand store migrate --from sqlite:<file> --to postgres://…`: moves a node's store from its
 * SQLite file to a Postgres database (then run the node with `store.url` set to the same URL).
 * Stop the node first: the copy is of the file as it is when the command runs.
 */
import type { Command } from 'commander';
import { NODE_SCHEMAS } from '../node/index.ts';
import { copySqliteToPostgres, isPostgresUrl } from '../store/index.ts';
import { fail } from './util.ts';

export function registerStoreCommand(program: Command): void {
  const store = program.command('store').description("the node's store: SQLite file or Postgres database");
  store
    .command('migrate')
    .description('copy a stopped node’s SQLite store into an empty Postgres database')
    .requiredOption(
      '--from <sqlite:file>',
      'the SQLite store, e.g. sqlite:~/.fiber-node/fiber/store/strand.db',
    )
    .requiredOption('--to <postgres://…>', 'an empty Postgres database: postgres://user:pass@host:port/db')
    .action((opts: { from: string; to: string }) => {
      if (!opts.from.startsWith('sqlite:')) fail(`--from: expected sqlite:<file>, got ${opts.from}`);
      if (!isPostgresUrl(opts.to)) fail(`--to: expected postgres://…, got ${opts.to}`);
      let copied: { table: string; rows: number }[];
      try {
        copied = copySqliteToPostgres(opts.from.slice('sqlite:'.length), opts.to, NODE_SCHEMAS);
      } catch (e) {
        fail((e as Error).message);
      }
      for (const t of copied) process.stdout.write(`${t.table}: ${t.rows} rows\n`);
      const total = copied.reduce((n, t) => n + t.rows, 0);
      process.stdout.write(`copied ${total} rows in ${copied.length} tables; set store.url to use them\n`);
    });
}
