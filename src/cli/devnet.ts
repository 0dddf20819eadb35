/**
 * `strand devnet`: what `npm start` runs — a dev chain and N nodes, connected and with channels,
 * until Ctrl-C. `strand devnet fund <node|address> <ckb> [--udt n] [--xudt n]`: the faucet.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { SHANNONS_PER_CKB as CKB } from '../codec/index.ts';
import {
  type DevnetDescription,
  formatDevnet,
  formatLive,
  formatSummary,
  loadTopology,
  runTraffic,
  startDevnet,
  type TrafficPattern,
} from '../devnet/index.ts';
import { isPostgresUrl } from '../store/index.ts';
import { fundFromFaucet } from './devnet-fund.ts';
import { fail } from './util.ts';

export function registerDevnetCommand(program: Command): void {
  const cmd = program
    .command('devnet')
    .description('run a local payment network: the embedded dev chain and N nodes (Ctrl-C stops it)')
    .option('-n, --nodes <n>', 'number of nodes', '3')
    .option(
      '-d, --dir <dir>',
      'network directory (reused: a restart keeps chain, keys and channels)',
      'devnet-data',
    )
    .option(
      '--topology <file.yml>',
      'peers to connect and channels to open (default: a line with 500 CKB channels)',
    )
    .option('--block-interval <ms>', 'dev chain block interval', '1000')
    .option(
      '--epoch-length <blocks>',
      'blocks per epoch of a new chain (short epochs: short commitment delays)',
    )
    .option('--base-port <port>', 'chain RPC port; node i gets RPC port+113+10i and P2P port+114+10i', '8114')
    .option('--reset', 'delete the network directory first (and, with Postgres, the nodes’ schemas)')
    .option(
      '--store-url <postgres://…>',
      'keep every node’s store in this Postgres database, a schema each (devnet_<name>); a restart reuses it',
    )
    .option(
      '--cch',
      'the first node runs the cross-chain hub, with an LND double as its Lightning node (its outside payer and payee one port up)',
    )
    .option('--lnd-port <port>', 'with --cch: the LND double’s gRPC port', '10009')
    .action(async (opts) => {
      const nodes = Number(opts.nodes);
      if (!Number.isInteger(nodes) || nodes < 1 || nodes > 16) fail('--nodes must be between 1 and 16');
      let topology: ReturnType<typeof loadTopology> | undefined;
      try {
        topology = opts.topology ? loadTopology(opts.topology) : undefined;
      } catch (e) {
        fail((e as Error).message);
      }
      if (opts.storeUrl !== undefined && !isPostgresUrl(opts.storeUrl))
        fail(`--store-url: expected postgres://user:password@host:port/database, got ${opts.storeUrl}`);
      const say = (line: string) => process.stdout.write(`[devnet] ${line}\n`);
      let net: Awaited<ReturnType<typeof startDevnet>>;
      try {
        net = await startDevnet({
          dir: path.resolve(opts.dir),
          nodes: topology?.nodes ?? nodes,
          blockIntervalMs: Number(opts.blockInterval),
          epochLength: opts.epochLength ? Number(opts.epochLength) : undefined,
          basePort: Number(opts.basePort),
          topology,
          reset: !!opts.reset,
          cch: !!opts.cch,
          lndPort: Number(opts.lndPort),
          storeUrl: opts.storeUrl,
          log: say,
        });
      } catch (e) {
        fail(`devnet failed to start: ${(e as Error).message}`);
      }
      process.stdout.write(`\n${formatDevnet(net.description)}\n\n`);
      say(`network described in ${path.join(path.resolve(opts.dir), 'devnet.json')}; Ctrl-C stops it`);
      let stopping = false;
      const stop = async (code: number) => {
        if (stopping) return;
        stopping = true;
        say('stopping…');
        await net.stop();
        process.exit(code);
      };
      process.on('SIGINT', () => void stop(0));
      process.on('SIGTERM', () => void stop(0));
      const crash = await net.crashed;
      process.stderr.write(`[devnet] ${crash}\n`);
      await stop(1);
    });

  registerTrafficCommand(cmd);

  cmd
    .command('fund <target> <ckb>')
    .description('send CKB (and --udt / --xudt test tokens) from the faucet to a devnet node or an address')
    .option('--udt <amount>', 'also send this many test UDT (simple UDT) units', '0')
    .option('--xudt <amount>', 'also send this many test xUDT units', '0')
    .action(async (target: string, ckb: string, opts, sub: Command) => {
      // `-d` belongs to `strand devnet` (commander hands it to the parent wherever it appears).
      const d = readDescription(String(sub.parent?.opts().dir ?? 'devnet-data'));
      if (![ckb, opts.udt, opts.xudt].every((v) => /^\d+$/.test(v))) fail('amounts are whole numbers');
      try {
        const lines = await fundFromFaucet(d, {
          target,
          ckb: BigInt(ckb),
          udt: BigInt(opts.udt),
          xudt: BigInt(opts.xudt),
          progress: (line) => process.stdout.write(`${line}\n`),
        });
        process.stdout.write(`${lines.join('\n')}\n`);
      } catch (e) {
        fail((e as Error).message);
      }
    });
}

/** `0.1` (CKB) → shannons; undefined when not a decimal with at most 8 places. */
function parseCkb(text: string): bigint | undefined {
  const m = /^(\d+)(?:\.(\d{1,8}))?$/.exec(text);
  return m ? BigInt(m[1]!) * CKB + BigInt((m[2] ?? '').padEnd(8, '0')) : undefined;
}

function registerTrafficCommand(cmd: Command): void {
  cmd
    .command('traffic')
    .description('pay invoices across the running devnet at a steady rate; a live line, then a summary')
    .option('--tps <n>', 'payments started per second', '1')
    .option('--duration <s>', 'seconds to send for', '10')
    .option(
      '--pattern <p>',
      'random: any node pays any other; hub: the best-connected node is always one end',
      'random',
    )
    .option('--amount <ckb>', 'amount of each payment, in CKB', '0.1')
    .option('--max-in-flight <n>', 'payments in flight at most (ticks beyond are skipped and counted)', '32')
    .option('--drain <s>', 'seconds to wait after the last send for payments in flight', '60')
    .option('--json', 'print the summary as one JSON line at the end')
    .action(async (opts, sub: Command) => {
      const tps = Number(opts.tps);
      const duration = Number(opts.duration);
      const maxInFlight = Number(opts.maxInFlight);
      const drain = Number(opts.drain);
      const amount = parseCkb(String(opts.amount));
      if (!(tps > 0 && tps <= 1000)) fail('--tps must be a number above 0 and at most 1000');
      if (!(duration > 0 && duration <= 86_400)) fail('--duration must be between 0 and 86400 seconds');
      if (!['random', 'hub'].includes(opts.pattern)) fail('--pattern must be random or hub');
      if (!amount) fail('--amount must be a positive amount of CKB with at most 8 decimals');
      if (!Number.isInteger(maxInFlight) || maxInFlight < 1)
        fail('--max-in-flight must be a whole number ≥ 1');
      if (!(drain >= 0)) fail('--drain must be a number of seconds ≥ 0');
      const d = readDescription(String(sub.parent?.opts().dir ?? 'devnet-data'));
      const tty = process.stdout.isTTY;
      process.stdout.write(
        `[traffic] ${opts.pattern} payments of ${opts.amount} CKB at ${tps}/s for ${duration} s across ${d.nodes.length} nodes\n`,
      );
      try {
        const summary = await runTraffic({
          nodes: d.nodes,
          tps,
          durationS: duration,
          pattern: opts.pattern as TrafficPattern,
          amount,
          maxInFlight,
          drainS: drain,
          // On a terminal the line is rewritten in place; piped, one line per second.
          progress: (s) =>
            process.stdout.write(tty ? `\r${formatLive(s)}\x1b[K` : `[traffic] ${formatLive(s)}\n`),
        });
        process.stdout.write(`${tty ? '\n' : ''}\n${formatSummary(summary)}\n`);
        if (opts.json) process.stdout.write(`${JSON.stringify(summary)}\n`);
      } catch (e) {
        fail(`traffic: ${(e as Error).message}`);
      }
    });
}

export function readDescription(dir: string): DevnetDescription {
  const file = path.join(dir, 'devnet.json');
  if (!fs.existsSync(file))
    fail(`${file} not found: start the network with 'strand devnet' (npm start) first`);
  return JSON.parse(fs.readFileSync(file, 'utf8')) as DevnetDescription;
}
