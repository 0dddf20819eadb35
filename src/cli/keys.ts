/**
 * `strand keys`: create or import a node's keys and show what they stand for (pubkey, peer id,
 * wallet lock and address). The wallet key is always written encrypted with the password from
 * FIBER_SECRET_KEY_PASSWORD.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { SIGHASH_ALL_TYPE_HASH } from '../chain/index.ts';
import { bytesToHex } from '../codec/index.ts';
import {
  blake160,
  identityFromSecret,
  isValidSecretKey,
  loadOrCreateNodeKey,
  loadWalletKey,
  PASSWORD_ENV,
  publicKeyOf,
  writeWalletKey,
} from '../crypto/index.ts';
import { defaultBaseDir, fail } from './util.ts';

interface KeyOpts {
  dir: string;
  mainnet?: boolean;
}

export function registerKeysCommand(program: Command): void {
  const keys = program.command('keys').description('node identity and wallet keys');
  keys
    .command('new')
    .description('create fiber/sk and an encrypted ckb/key (kept if they exist), then show them')
    .option('-d, --dir <dir>', 'base directory', defaultBaseDir())
    .option('--mainnet', 'show a mainnet (ckb…) address instead of testnet/dev (ckt…)')
    .action((opts: KeyOpts) => show(opts, true));
  keys
    .command('show')
    .description('show pubkey, peer id, wallet lock args and address')
    .option('-d, --dir <dir>', 'base directory', defaultBaseDir())
    .option('--mainnet', 'show a mainnet (ckb…) address')
    .action((opts: KeyOpts) => show(opts, false));
  keys
    .command('import')
    .description('import a wallet secret key (64 hex chars, or a file holding them) into ckb/key, encrypted')
    .requiredOption('--wallet-key <hex|file>', 'the secret key, or a path to a file holding it')
    .option('-d, --dir <dir>', 'base directory', defaultBaseDir())
    .action(async (opts: KeyOpts & { walletKey: string }) => {
      const password = passwordOrFail();
      const text = fs.existsSync(opts.walletKey) ? fs.readFileSync(opts.walletKey, 'utf8') : opts.walletKey;
      const hex = text.trim().replace(/^0x/, '');
      const sk = /^[0-9a-fA-F]{64}$/.test(hex) ? new Uint8Array(Buffer.from(hex, 'hex')) : undefined;
      if (!sk || !isValidSecretKey(sk)) fail('--wallet-key: expected a 32-byte secp256k1 secret key in hex');
      try {
        writeWalletKey(path.join(opts.dir, 'ckb', 'key'), sk, password);
      } catch (e) {
        fail((e as Error).message);
      }
      await show(opts, false);
    });
}

function passwordOrFail(): string {
  const password = process.env[PASSWORD_ENV];
  if (!password) fail(`${PASSWORD_ENV} must be set to encrypt or decrypt the wallet key`);
  return password;
}

async function show(opts: KeyOpts, create: boolean): Promise<void> {
  const skFile = path.join(opts.dir, 'fiber', 'sk');
  const walletFile = path.join(opts.dir, 'ckb', 'key');
  if (!create && !fs.existsSync(skFile)) fail(`${skFile} does not exist (run 'strand keys new')`);
  try {
    const id = identityFromSecret(loadOrCreateNodeKey(skFile));
    const out: Record<string, string> = { pubkey: id.pubkeyHex, peer_id: id.peerId };
    if (create || fs.existsSync(walletFile)) {
      const wallet = loadWalletKey(walletFile, { password: passwordOrFail(), create });
      const args = bytesToHex(blake160(publicKeyOf(wallet)));
      out.wallet_lock_args = args;
      // Loaded lazily: @ckb-ccc/core is large and only this command needs it here.
      const { ccc } = await import('@ckb-ccc/core');
      out.wallet_address = ccc.Address.from({
        script: { codeHash: SIGHASH_ALL_TYPE_HASH, hashType: 'type', args },
        prefix: opts.mainnet ? 'ckb' : 'ckt',
      }).toString();
    }
    process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
  } catch (e) {
    fail((e as Error).message);
  }
}
