/**
 * dev `sign_external_funding_tx` (fiber-rpc.md §1.9): signs, with a given secp256k1 key, every
 * input of a funding transaction locked by that key's sighash-all lock — a helper for testing
 * externally funded channels. Debug only (the `dev` module is off by default): the key crosses
 * the RPC.
 */
import { ccc } from '@ckb-ccc/core';
import { cccA } from '@ckb-ccc/core/advanced';
import { z } from 'zod';
import type { ChainClient } from '../../chain/index.ts';
import { sighashLock, txToJson } from '../../chain/index.ts';
import { bytesToHex } from '../../codec/index.ts';
import { isValidSecretKey, lockArgsOf, signSighashAll } from '../../crypto/index.ts';
import { RpcMethodError } from '../errors.ts';
import { type MethodSpec, method } from '../method.ts';
import * as R from '../results.ts';

export function externalFundingMethods(chain: Pick<ChainClient, 'getLiveCell'>): MethodSpec[] {
  return [
    method({
      name: 'sign_external_funding_tx',
      module: 'dev',
      description:
        'Dev: signs every input of a funding transaction locked by the sighash-all lock of `private_key` (for testing external funding; the key crosses the RPC).',
      result: z.strictObject({ signed_funding_tx: R.txOut }),
      params: z.object({
        unsigned_funding_tx: z.record(z.string(), z.unknown()),
        private_key: z.string().regex(/^(0x)?[0-9a-fA-F]*$/, { error: 'expected a hex private key' }),
      }),
      handler: async (p) => {
        const hex = p.private_key.replace(/^0x/, '');
        if (hex.length !== 64) {
          throw new RpcMethodError(
            'InvalidPrivateKey',
            `invalid private key length: expected 32 bytes, got ${hex.length / 2}`,
          );
        }
        const sk = Uint8Array.from(Buffer.from(hex, 'hex'));
        if (!isValidSecretKey(sk))
          throw new RpcMethodError('InvalidPrivateKey', 'invalid private key: not a secp256k1 secret key');
        let tx: ccc.Transaction;
        try {
          tx = ccc.Transaction.from(
            (
              cccA.JsonRpcTransformers as unknown as { transactionTo(j: unknown): ccc.TransactionLike }
            ).transactionTo(p.unsigned_funding_tx),
          );
        } catch (e) {
          throw new RpcMethodError(
            'InvalidTransaction',
            `invalid unsigned_funding_tx: ${(e as Error).message}`,
          );
        }
        const lock = sighashLock(bytesToHex(lockArgsOf(sk)));
        const mine: number[] = [];
        for (const [i, input] of tx.inputs.entries()) {
          const live = (await chain.getLiveCell(input.previousOutput, false)) as {
            status: string;
            cell?: { output: { lock: { code_hash: string; hash_type: string; args: string } } };
          };
          const l = live.cell?.output.lock;
          if (!l) continue;
          const script = ccc.Script.from({
            codeHash: l.code_hash,
            hashType: l.hash_type as ccc.HashType,
            args: l.args,
          });
          if (script.eq(lock)) mine.push(i);
        }
        if (mine.length === 0)
          throw new RpcMethodError(
            'NoMatchingInputs',
            'no transaction inputs matched the provided private key',
          );
        signSighashAll(tx, mine, sk);
        return { signed_funding_tx: txToJson(tx) };
      },
    }),
  ];
}
