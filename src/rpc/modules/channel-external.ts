/**
 * `channel` module, external funding (fiber-rpc.md §1.3): `open_channel_with_external_funding`
 * → `{channel_id, unsigned_funding_tx}` once the peer accepted and the funding tx is frozen;
 * `submit_signed_funding_tx` → `{channel_id, funding_tx_hash}`. The user signs off-node (for
 * tests, the dev module's `sign_external_funding_tx`). See `channel/external-funding.ts`.
 */
import { ccc } from '@ckb-ccc/core';
import { cccA } from '@ckb-ccc/core/advanced';
import { z } from 'zod';
import { txToJson } from '../../chain/index.ts';
import type { ChannelService } from '../../channel/index.ts';
import { InvalidParams } from '../../codec/index.ts';
import { type MethodSpec, method } from '../method.ts';
import * as R from '../results.ts';
import { echo, h256, pubkey, script, u32 } from '../schema.ts';
import { openParams as openChannelParams, openTerms } from './channel.ts';

const cellDep = z.object({
  out_point: z.object({ tx_hash: h256, index: u32 }),
  dep_type: z.enum(['code', 'dep_group']),
});

/** A CKB JSON transaction; its contents are checked when converted. */
const txJson = z.looseObject({
  version: z.string(),
  cell_deps: z.array(z.unknown()),
  header_deps: z.array(z.string()),
  inputs: z.array(z.unknown()),
  outputs: z.array(z.unknown()),
  outputs_data: z.array(z.string()),
  witnesses: z.array(z.string()),
});

/** `open_channel`'s params without `peer_id` / `one_way`; `pubkey` and the scripts required. */
const openParams = openChannelParams.omit({ peer_id: true, one_way: true }).extend({
  pubkey: z.string(),
  shutdown_script: script,
  funding_lock_script: script,
  funding_lock_script_cell_deps: z.array(cellDep).nullish(),
});

type ScriptJson = z.output<typeof script>;
const toCcc = (s: ScriptJson) =>
  ccc.Script.from({ codeHash: s.code_hash, hashType: s.hash_type, args: s.args });

function txFromJson(j: unknown, field: string): ccc.Transaction {
  try {
    return ccc.Transaction.from(
      (
        cccA.JsonRpcTransformers as unknown as { transactionTo(j: unknown): ccc.TransactionLike }
      ).transactionTo(j),
    );
  } catch (e) {
    throw new InvalidParams(`invalid ${field}: ${(e as Error).message}`);
  }
}

export function channelExternalFundingMethods(svc: ChannelService): MethodSpec[] {
  return [
    method({
      name: 'open_channel_with_external_funding',
      module: 'channel',
      description:
        'Opens a channel funded by cells of `funding_lock_script` that the node does not hold. Answers once the peer accepted, with the unsigned funding transaction to sign off-node and pass to `submit_signed_funding_tx`.',
      result: z.strictObject({ channel_id: R.hash, unsigned_funding_tx: R.txOut }),
      params: openParams,
      handler: async (p) => {
        const pk = pubkey.safeParse(p.pubkey);
        if (!pk.success)
          throw new InvalidParams(
            `invalid pubkey '${echo(p.pubkey)}': expected a 33-byte compressed public key`,
          );
        const r = await svc.openChannelWithExternalFunding({
          pubkey: pk.data,
          // shutdown_script is required here, so the terms always carry it.
          ...openTerms(p),
          external: {
            lock: toCcc(p.funding_lock_script),
            cellDeps: (p.funding_lock_script_cell_deps ?? []).map((d) => ({
              outPoint: { txHash: d.out_point.tx_hash, index: d.out_point.index },
              depType: d.dep_type === 'dep_group' ? 'depGroup' : 'code',
            })),
          },
        });
        return { channel_id: r.channelId, unsigned_funding_tx: txToJson(r.unsignedFundingTx) };
      },
    }),
    method({
      name: 'submit_signed_funding_tx',
      module: 'channel',
      description:
        'Submits the signed funding transaction of an externally funded channel; the node checks it matches the one it built.',
      result: z.strictObject({ channel_id: R.hash, funding_tx_hash: R.hash }),
      params: z.object({ channel_id: h256, signed_funding_tx: txJson }),
      handler: async (p) => {
        const tx = txFromJson(p.signed_funding_tx, 'signed_funding_tx');
        const r = await svc.submitSignedFundingTx(p.channel_id, tx);
        return { channel_id: r.channelId, funding_tx_hash: r.fundingTxHash };
      },
    }),
  ];
}
