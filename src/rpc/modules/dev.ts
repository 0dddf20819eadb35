/**
 * `dev` module (fiber-rpc.md §1.9): drive a channel's TLCs and commitments by hand —
 * `add_tlc`, `remove_tlc`, `commitment_signed`, `submit_commitment_transaction`,
 * `check_channel_shutdown`. RemoveTlcReason is untagged, as the reference's:
 * `{"payment_preimage": "0x…"}` fulfils, `{"error_code": "<TlcErrorCode name>"}` fails.
 */
import { z } from 'zod';
import type { ChannelService } from '../../channel/index.ts';
import { ChannelError, commitmentNumberOf } from '../../channel/index.ts';
import { hexToBytes, toHexQuantity as q } from '../../codec/index.ts';
import { TLC_ERROR_CODES } from '../../payment/index.ts';
import { RpcMethodError } from '../errors.ts';
import { type MethodSpec, method } from '../method.ts';
import * as R from '../results.ts';
import { h256, u64, u128 } from '../schema.ts';

const reason = z.union([z.object({ payment_preimage: h256 }), z.object({ error_code: z.string().max(64) })]);

export function devMethods(svc: ChannelService): MethodSpec[] {
  return [
    method({
      name: 'add_tlc',
      module: 'dev',
      description: 'Dev: offers a TLC on a channel by hand (no onion).',
      result: z.strictObject({ tlc_id: R.hexQ }),
      params: z.object({
        channel_id: h256,
        amount: u128,
        payment_hash: h256,
        expiry: u64,
        hash_algorithm: z.enum(['ckb_hash', 'sha256']).optional(),
      }),
      handler: async (p) => {
        const r = await svc.addTlc(
          p.channel_id,
          {
            amount: p.amount,
            paymentHash: hexToBytes(p.payment_hash),
            expiry: p.expiry,
            hashAlgorithm: p.hash_algorithm === 'sha256' ? 1 : 0,
            onion: new Uint8Array(0),
          },
          { waitMs: 0 },
        );
        return { tlc_id: q(r.tlcId) };
      },
    }),
    method({
      name: 'remove_tlc',
      module: 'dev',
      description: 'Dev: fulfils (`payment_preimage`) or fails (`error_code`) a received TLC by hand.',
      result: R.nullResult,
      params: z.object({ channel_id: h256, tlc_id: u64, reason }),
      handler: async (p) => {
        if ('payment_preimage' in p.reason) {
          await svc.removeTlc(
            p.channel_id,
            p.tlc_id,
            { preimage: hexToBytes(p.reason.payment_preimage) },
            { waitMs: 0 },
          );
        } else {
          // Own names only: `toString` and friends are not error codes.
          const name = p.reason.error_code;
          const code = Object.hasOwn(TLC_ERROR_CODES, name)
            ? (TLC_ERROR_CODES as Record<string, number>)[name]
            : undefined;
          if (code === undefined)
            throw new RpcMethodError('InvalidParameter', `invalid error code: ${p.reason.error_code}`);
          // Without an onion route, the error packet is the bare big-endian code.
          await svc.removeTlc(
            p.channel_id,
            p.tlc_id,
            { error: new Uint8Array([code >> 8, code & 0xff]) },
            { waitMs: 0 },
          );
        }
        return null;
      },
    }),
    method({
      name: 'commitment_signed',
      module: 'dev',
      description: 'Dev: starts a commitment round on a channel.',
      result: R.nullResult,
      params: z.object({ channel_id: h256 }),
      handler: async (p) => {
        await svc.commitmentSigned(p.channel_id);
        return null;
      },
    }),
    method({
      name: 'submit_commitment_transaction',
      module: 'dev',
      description:
        "Dev: publishes the channel's latest commitment transaction if `commitment_number` is its number.",
      result: z.strictObject({ tx_hash: R.hash }),
      params: z.object({ channel_id: h256, commitment_number: u64 }),
      handler: async (p) => {
        // The reference sends the commitment it filed under (channel, number) and knows no other
        // answer: an unknown channel or a number that is not our latest commitment's is "not found".
        // Nothing is awaited between this check and the send, so the commitment cannot move on.
        const ch = svc.get(p.channel_id);
        if (!ch?.latestCommitmentTx || commitmentNumberOf(ch.latestCommitmentTx) !== p.commitment_number)
          throw new ChannelError('CommitmentTxNotFound', 'Commitment transaction not found');
        const r = await svc.submitCommitmentTransaction(p.channel_id);
        return { tx_hash: r.txHash };
      },
    }),
    method({
      name: 'check_channel_shutdown',
      module: 'dev',
      description: 'Dev: checks whether a shutting-down channel can complete its close now.',
      result: R.nullResult,
      params: z.object({ channel_id: h256 }),
      handler: async (p) => {
        await svc.checkChannelShutdown(p.channel_id);
        return null;
      },
    }),
  ];
}
