/**
 * `strand rpc [--url …|--node <name>] [--token …] <method> [params]`: one JSON-RPC call, the result
 * pretty-printed (errors on stderr, exit 1). `params` is JSON: an object is sent as `[object]`.
 */
import type { Command } from 'commander';
import { createRpcClient, RpcCallError } from '../rpc/client.ts';
import { readDescription } from './devnet.ts';
import { fail } from './util.ts';

export function registerRpcCommand(program: Command): void {
  program
    .command('rpc <method> [params]')
    .description("call a node: strand rpc node_info; strand rpc --node bob list_channels '{}'")
    .option('--url <url>', 'node RPC URL (default $STRAND_RPC_URL or http://127.0.0.1:8227)')
    .option('--node <name>', 'a devnet node by name (reads <dir>/devnet.json)')
    .option('-d, --dir <dir>', 'devnet directory for --node', 'devnet-data')
    .option('--token <token>', 'bearer token (default $STRAND_RPC_TOKEN)')
    .option(
      '--get <path>',
      'print only this field of the result, e.g. invoice_address or invoice.data.payment_hash',
    )
    .action(async (method: string, paramsText: string | undefined, opts) => {
      let url: string = opts.url ?? process.env.STRAND_RPC_URL ?? 'http://127.0.0.1:8227';
      if (opts.node) {
        const node = readDescription(opts.dir).nodes.find((n) => n.name === opts.node);
        if (!node) fail(`no devnet node named '${opts.node}'`);
        url = node.rpc_url;
      }
      let params: unknown;
      if (paramsText !== undefined) {
        try {
          params = JSON.parse(paramsText);
        } catch {
          fail(`params must be JSON, e.g. '{"amount":"0x64"}'`);
        }
      }
      let result: unknown;
      try {
        result = await createRpcClient(url, opts.token ?? process.env.STRAND_RPC_TOKEN).call(method, params);
      } catch (e) {
        if (e instanceof RpcCallError) {
          process.stderr.write(
            `${JSON.stringify({ code: e.code, message: e.message, data: e.data }, null, 2)}\n`,
          );
          process.exit(1);
        }
        fail(`cannot reach ${url}: ${(e as Error).message}`);
      }
      if (opts.get) {
        const value = String(opts.get)
          .split('.')
          .reduce<unknown>(
            (v, k) => (v && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined),
            result,
          );
        if (value === undefined) fail(`the result has no field ${opts.get}`);
        process.stdout.write(`${typeof value === 'string' ? value : JSON.stringify(value, null, 2)}\n`);
        return;
      }
      process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    });
}
