/**
 * `strand devnet`: what `npm start` runs — a dev chain and N nodes, connected and with channels,
 * until Ctrl-C. `strand devnet fund <node|address> <ckb> [--udt n] [--xudt n]`: the faucet.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { SIGHASH_ALL_TYPE_HASH } from '../chain/address.ts';
import { toHexQuantity } from '../codec/hex.ts';
import { type DevnetDescription, formatDevnet, startDevnet } from '../devnet/devnet.ts';
import { loadTopology } from '../devnet/topology.ts';
import { createRpcClient } from '../rpc/client.ts';
import { fail } from './util.ts';

const CKB = 100_000_000n;

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
    .option('--reset', 'delete the network directory first')
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

  cmd
    .command('fund <target> <ckb>')
    .description('send CKB (and --udt / --xudt test tokens) from the faucet to a devnet node or an address')
    .option('--udt <amount>', 'also send this many test UDT (simple UDT) units', '0')
    .option('--xudt <amount>', 'also send this many test xUDT units', '0')
    .action(async (target: string, ckb: string, opts, sub: Command) => {
      // `-d` belongs to `strand devnet` (commander hands it to the parent wherever it appears).
      const d = readDescription(String(sub.parent?.opts().dir ?? 'devnet-data'));
      const node = d.nodes.find((n) => n.name === target);
      const args = node ? node.wallet_lock_args : target;
      // Lock args of a secp256k1-blake160 wallet, or an address as it is.
      const to = /^0x[0-9a-fA-F]{40}$/.test(args)
        ? { code_hash: SIGHASH_ALL_TYPE_HASH, hash_type: 'type', args }
        : args;
      if (![ckb, opts.udt, opts.xudt].every((v) => /^\d+$/.test(v))) fail('amounts are whole numbers');
      try {
        const hash = await createRpcClient(d.chain.rpc_url).call('faucet', [
          to,
          toHexQuantity(BigInt(ckb) * CKB),
          toHexQuantity(BigInt(opts.udt)),
          toHexQuantity(BigInt(opts.xudt)),
        ]);
        process.stdout.write(`${hash}\n`);
      } catch (e) {
        fail((e as Error).message);
      }
    });
}

export function readDescription(dir: string): DevnetDescription {
  const file = path.join(dir, 'devnet.json');
  if (!fs.existsSync(file))
    fail(`${file} not found: start the network with 'strand devnet' (npm start) first`);
  return JSON.parse(fs.readFileSync(file, 'utf8')) as DevnetDescription;
}
