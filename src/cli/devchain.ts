/**
 * `strand devchain -d <dir> [--listen 127.0.0.1:8114] [--block-interval 1000]`: runs the embedded
 * CKB-style dev chain with its JSON-RPC; `strand devchain faucet <address> <ckb>` funds an address
 * from a running dev chain.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { ccc } from '@ckb-ccc/core';
import type { Command } from 'commander';
import { addressToScript, createChainClient, sighashLock } from '../chain/index.ts';
import { bytesToHex, SHANNONS_PER_CKB as CKB, hexToBytes } from '../codec/index.ts';
import { decryptWalletKey, lockArgsOf, PASSWORD_ENV } from '../crypto/index.ts';
import {
  DEFAULT_SPEC_TOML,
  type DevAccount,
  DevChain,
  devScriptsJson,
  STRAND_SPEC_TOML,
  startDevchainRpc,
} from '../devchain/index.ts';
import { onParentGone } from './parent-gone.ts';
import { fail } from './util.ts';

export function registerDevchainCommand(program: Command): void {
  const cmd = program
    .command('devchain')
    .description('run the embedded CKB dev chain (CKB JSON-RPC, indexer, blocks on a timer)')
    .option('-d, --dir <dir>', 'chain directory (its SQLite database lives here)', './devchain')
    .option('--listen <host:port>', 'JSON-RPC listen address', '127.0.0.1:8114')
    .option('--block-interval <ms>', 'produce a block every <ms> milliseconds (0: only on demand)', '1000')
    .option('--epoch-length <blocks>', 'blocks per epoch (default: the spec genesis_epoch_length)')
    .option(
      '--spec <file|dev|strand>',
      "CKB chain spec TOML; 'dev' (default): CKB's dev spec, 'strand': with Strand's scripts in genesis for reference nodes",
      'dev',
    )
    .option(
      '--fund <account...>',
      'fund at creation: <address|0x lock args|key file>:<CKB>[:<UDT>[:<xUDT>]] (repeatable; an encrypted ckb/key needs FIBER_SECRET_KEY_PASSWORD)',
    )
    .action(async (opts) => {
      let chain: DevChain;
      try {
        const accounts = ((opts.fund as string[] | undefined) ?? []).map((s) => parseAccount(s));
        if (fs.existsSync(path.join(opts.dir, 'devchain.sqlite')) && (accounts.length || opts.epochLength)) {
          process.stderr.write(
            'devchain: the chain already exists; --fund and --epoch-length apply at creation only (use `strand devchain faucet`)\n',
          );
        }
        chain = DevChain.open({
          dir: opts.dir,
          specToml:
            opts.spec === 'dev'
              ? DEFAULT_SPEC_TOML
              : opts.spec === 'strand'
                ? STRAND_SPEC_TOML
                : fs.readFileSync(opts.spec, 'utf8'),
          epochLength: opts.epochLength ? BigInt(opts.epochLength) : undefined,
          accounts,
        });
      } catch (e) {
        fail(`cannot open the dev chain: ${(e as Error).message}`);
      }
      const [host, portText] = splitListen(String(opts.listen));
      let server: Awaited<ReturnType<typeof startDevchainRpc>>;
      try {
        server = await startDevchainRpc(chain, host, Number(portText));
      } catch (e) {
        chain.close();
        fail(`cannot listen on ${opts.listen}: ${(e as Error).message}`);
      }
      const interval = Number(opts.blockInterval);
      if (!Number.isFinite(interval) || interval < 0)
        fail('--block-interval must be a number of milliseconds');
      chain.startMining(interval);
      process.stdout.write(
        `devchain rpc ${server.url}\nchain hash ${chain.genesisHash}\ntip ${chain.tip.number}\n` +
          `scripts ${JSON.stringify(devScriptsJson(chain.scripts))}\n`,
      );
      const stop = async () => {
        chain.stopMining();
        await server.close();
        chain.close();
        process.exit(0);
      };
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      onParentGone(() => void stop());
    });

  cmd
    .command('faucet <to> <ckb>')
    .description(
      'send CKB (and optionally the test tokens) from the dev chain faucet to an address or lock args',
    )
    .option('--udt <amount>', 'also send this much test UDT (simple UDT)', '0')
    .option('--xudt <amount>', 'also send this much test xUDT', '0')
    .option('--rpc <url>', 'dev chain JSON-RPC URL', 'http://127.0.0.1:8114/')
    .action(async (to: string, ckb: string, opts) => {
      const client = createChainClient({ rpcUrl: opts.rpc, attempts: 2 });
      try {
        const lock = lockFor(to);
        const hash = await client.call<string>('faucet', [
          { code_hash: lock.codeHash, hash_type: lock.hashType, args: lock.args },
          `0x${parseCkb(ckb).toString(16)}`,
          `0x${BigInt(opts.udt).toString(16)}`,
          `0x${BigInt(opts.xudt).toString(16)}`,
        ]);
        process.stdout.write(`${hash}\n`);
      } catch (e) {
        fail((e as Error).message);
      }
    });
}

function splitListen(listen: string): [string, string] {
  const i = listen.lastIndexOf(':');
  if (i <= 0) fail(`--listen must be host:port, got '${listen}'`);
  return [listen.slice(0, i).replace(/^\[|\]$/g, ''), listen.slice(i + 1)];
}

/** An address, 20-byte lock args, or a file holding a hex secret key → the lock to fund. */
function lockFor(spec: string): ccc.Script {
  if (/^0x[0-9a-fA-F]{40}$/.test(spec)) return sighashLock(spec);
  if (/^ck[bt]1/.test(spec)) return addressToScript(spec);
  if (fs.existsSync(spec)) {
    const data = fs.readFileSync(spec);
    const text = data.toString('utf8').trim().split(/\s+/)[0] ?? '';
    let key: Uint8Array;
    if (/^(0x)?[0-9a-fA-F]{64}$/.test(text)) {
      key = hexToBytes(text.startsWith('0x') ? text : `0x${text}`, `key file ${spec}`, 32);
    } else {
      // An encrypted wallet key (`ckb/key`), opened with the node's password variable.
      const password = process.env[PASSWORD_ENV];
      if (!password) throw new Error(`${spec} is an encrypted key file: set ${PASSWORD_ENV} to read it`);
      key = decryptWalletKey(new Uint8Array(data), password, spec);
    }
    return sighashLock(bytesToHex(lockArgsOf(key)));
  }
  throw new Error(`'${spec}' is not an address, 20-byte lock args or a key file`);
}

function parseCkb(text: string): bigint {
  if (!/^\d+(\.\d{1,8})?$/.test(text)) throw new Error(`invalid CKB amount '${text}'`);
  const [whole, frac = ''] = text.split('.');
  return BigInt(whole as string) * CKB + BigInt(frac.padEnd(8, '0'));
}

/** `<account>:<CKB>[:<UDT>[:<xUDT>]]`; a token amount may be left empty (`key:100::50`). */
export function parseAccount(spec: string, lockOf: (account: string) => ccc.Script = lockFor): DevAccount {
  const parts = spec.split(':');
  // An address has no ':', so the trailing numeric parts (at most three) are the amounts.
  const amounts: string[] = [];
  while (amounts.length < 3 && parts.length > 1 && /^[\d.]*$/.test(parts[parts.length - 1] as string))
    amounts.unshift(parts.pop() as string);
  const [ckb, udt, xudt] = amounts;
  if (!ckb || parts.length === 0)
    throw new Error(`--fund '${spec}': expected <account>:<CKB>[:<UDT>[:<xUDT>]]`);
  const token = (v: string | undefined) => {
    if (!v) return undefined;
    if (!/^\d+$/.test(v)) throw new Error(`--fund '${spec}': token amounts are whole numbers`);
    return BigInt(v);
  };
  return { lock: lockOf(parts.join(':')), capacity: parseCkb(ckb), udt: token(udt), xudt: token(xudt) };
}
