/**
 * `strand token keygen` and `strand token mint`: an operator's tools for RPC authentication.
 * The private key stays with the operator (keep it offline); only the public key goes into the
 * node's `rpc.auth_public_key`.
 */
import type { Command } from 'commander';
import { generateKeyPair, mintToken, PERMISSIONS } from '../rpc/index.ts';
import { fail } from './util.ts';

export function registerTokenCommand(program: Command): void {
  const token = program.command('token').description('RPC authentication: keys and Biscuit tokens');
  token
    .command('keygen')
    .description('create a root key pair; put the public key in rpc.auth_public_key')
    .action(async () => {
      const kp = await generateKeyPair();
      process.stdout.write(`private_key: ${kp.privateKey}\npublic_key: ${kp.publicKey}\n`);
    });
  token
    .command('mint')
    .description('mint a token with the given permissions, e.g. --permission \'read("node")\'')
    .requiredOption(
      '--private-key <key>',
      'root private key (ed25519-private/<hex>), or env STRAND_AUTH_PRIVATE_KEY',
    )
    .option('--permission <fact...>', 'permission facts: read("<resource>") / write("<resource>")', [])
    .option('--node-id <peer id>', 'caller identity for watchtower methods: adds node("<peer id>")')
    .option('--expires <iso date>', 'expiry time (RFC 3339), checked by the node on every call')
    .action(async (opts: { privateKey: string; permission: string[]; nodeId?: string; expires?: string }) => {
      const facts = [...opts.permission];
      const known = new Set(Object.values(PERMISSIONS).map((p) => `${p.access}("${p.resource}")`));
      for (const f of facts) {
        if (!known.has(f.replace(/\s+/g, '')))
          fail(`unknown permission ${f}; e.g. read("node"), write("payments")`);
      }
      if (opts.nodeId) facts.push(`node(${JSON.stringify(opts.nodeId)})`);
      if (facts.length === 0) fail('give at least one --permission');
      const expires = opts.expires ? new Date(opts.expires) : undefined;
      if (expires && Number.isNaN(expires.getTime())) fail(`invalid --expires date '${opts.expires}'`);
      process.stdout.write(`${await mintToken(opts.privateKey, { facts, expires })}\n`);
    });
}
