/**
 * `watchtower` module (`fiber-rpc.md` §1.8): the seven methods that feed a watchtower with the
 * data it needs to protect a channel while its node is offline. Every result is null. Data is
 * kept per caller: the server hands the `node("…")` identity of the token (auth on) as
 * `ctx.callerNodeId`; without auth the caller is the node itself (`''`).
 */
import { base58 } from '@scure/base';
import { z } from 'zod';
import { InvalidParams } from '../../codec/index.ts';
import { ckbHash, sha256 } from '../../crypto/index.ts';
import type {
  RevocationData,
  SettlementData,
  SettlementTlcData,
  WatchtowerStore,
} from '../../watchtower/index.ts';
import {
  checkCellOutput,
  checkPubkey,
  checkSecretKey,
  checkSignature,
  moleculeBytes,
  WatchtowerError,
} from '../../watchtower/index.ts';
import { type CallContext, type MethodSpec, method } from '../method.ts';
import * as R from '../results.ts';
import { bytes, echo, h256, script, u64, u128 } from '../schema.ts';

/** Keys travel as hex without `0x` (with it accepted too), as the reference's Privkey/Pubkey. */
const hexKey = (n: number, what: string) =>
  z
    .string({ error: `expected ${what}` })
    .regex(new RegExp(`^(0x)?[0-9a-fA-F]{${n * 2}}$`), { error: `expected ${what} (${n} bytes hex)` })
    .transform((s) => `0x${(s.startsWith('0x') ? s.slice(2) : s).toLowerCase()}`);
const privkey = hexKey(32, 'a secret key');
const pubkeyHex = hexKey(33, 'a public key');

const tlcId = z.union([
  z.strictObject({ Offered: u64 }).transform((x) => ({ offered: true, id: x.Offered })),
  z.strictObject({ Received: u64 }).transform((x) => ({ offered: false, id: x.Received })),
]);

const settlementTlc = z.object({
  tlc_id: tlcId,
  hash_algorithm: z.enum(['ckb_hash', 'sha256']),
  payment_amount: u128,
  payment_hash: h256,
  expiry: u64,
  local_key: privkey,
  remote_key: pubkeyHex,
});

/** At most this many TLCs per settlement: a settlement script counts them in one byte. */
const MAX_TLCS = 255;

const settlementData = z.object({
  local_amount: u128,
  remote_amount: u128,
  tlcs: z.array(settlementTlc).max(MAX_TLCS),
});

const revocationData = z.object({
  commitment_number: u64,
  aggregated_signature: bytes,
  output: bytes,
  output_data: bytes,
});

/** The reference's conversions, with its error texts (`invalid remote_key: …`). */
function toSettlement(s: z.output<typeof settlementData>): SettlementData {
  const tlcs: SettlementTlcData[] = s.tlcs.map((t) => {
    checkSecretKey(t.local_key);
    const remote = checkPubkey(t.remote_key);
    if (remote) throw new WatchtowerError('InvalidRemoteKey', `invalid remote_key: ${remote}`);
    return {
      tlcId: t.tlc_id,
      hashAlgorithm: t.hash_algorithm,
      paymentAmount: t.payment_amount,
      paymentHash: t.payment_hash,
      expiry: t.expiry,
      localKey: t.local_key,
      remoteKey: t.remote_key,
    };
  });
  return { localAmount: s.local_amount, remoteAmount: s.remote_amount, tlcs };
}

/** Settlement data as a caller sends it (JSON) → what the watchtower keeps; throws on bad input. */
export function settlementDataFromJson(v: unknown): SettlementData {
  return toSettlement(settlementData.parse(v));
}

function toRevocation(r: z.output<typeof revocationData>): RevocationData {
  const sig = checkSignature(r.aggregated_signature);
  if (sig) throw new WatchtowerError('InvalidSignature', `invalid aggregated_signature: ${sig}`);
  const output = checkCellOutput(r.output);
  if (!output) throw new InvalidParams('invalid output: not a molecule CellOutput');
  const data = moleculeBytes(r.output_data);
  if (data === null) throw new InvalidParams('invalid output_data: not molecule Bytes');
  return {
    commitmentNumber: r.commitment_number,
    aggregatedSignature: r.aggregated_signature,
    output: r.output,
    outputData: data,
  };
}

/** The caller: a base58 node id (`''` = the node itself), re-encoded canonically. */
export function callerOf(ctx: CallContext): string {
  const id = ctx.callerNodeId ?? '';
  try {
    return base58.encode(base58.decode(id));
  } catch {
    throw new WatchtowerError('InvalidNodeId', `can't parse node_id: ${echo(id)}`);
  }
}

function keyError(hex: string): void {
  const e = checkPubkey(hex);
  if (e) throw new WatchtowerError('InvalidRemoteKey', e);
}

export function watchtowerMethods(store: WatchtowerStore): MethodSpec[] {
  return [
    method({
      name: 'create_watch_channel',
      module: 'watchtower',
      description:
        'Watchtower: starts watching a channel of the caller, with the keys and settlement data needed to punish a breach or settle while the caller is offline.',
      result: R.nullResult,
      params: z.object({
        channel_id: h256,
        funding_udt_type_script: script.nullish(),
        local_settlement_key: privkey,
        remote_settlement_key: pubkeyHex,
        local_funding_pubkey: pubkeyHex,
        remote_funding_pubkey: pubkeyHex,
        settlement_data: settlementData,
      }),
      handler: (p, ctx) => {
        const nodeId = callerOf(ctx);
        checkSecretKey(p.local_settlement_key);
        keyError(p.remote_settlement_key);
        keyError(p.local_funding_pubkey);
        keyError(p.remote_funding_pubkey);
        const settlement = toSettlement(p.settlement_data);
        store.insertChannel({
          nodeId,
          channelId: p.channel_id,
          fundingUdtTypeScript: p.funding_udt_type_script ?? null,
          localSettlementKey: p.local_settlement_key,
          remoteSettlementKey: p.remote_settlement_key,
          localFundingPubkey: p.local_funding_pubkey,
          remoteFundingPubkey: p.remote_funding_pubkey,
          remoteSettlementData: settlement,
          pendingRemoteSettlementData: settlement,
          localSettlementData: settlement,
          revocationData: null,
        });
        return null;
      },
    }),
    method({
      name: 'remove_watch_channel',
      module: 'watchtower',
      description: 'Watchtower: stops watching a channel of the caller.',
      result: R.nullResult,
      params: z.object({ channel_id: h256 }),
      handler: (p, ctx) => {
        store.removeChannel(callerOf(ctx), p.channel_id);
        return null;
      },
    }),
    method({
      name: 'update_revocation',
      module: 'watchtower',
      description:
        "Watchtower: records the revocation of the peer's previous commitment and the new settlement data.",
      result: R.nullResult,
      params: z.object({
        channel_id: h256,
        revocation_data: revocationData,
        settlement_data: settlementData,
      }),
      handler: (p, ctx) => {
        const nodeId = callerOf(ctx);
        const rev = toRevocation(p.revocation_data);
        store.updateRevocation(nodeId, p.channel_id, rev, toSettlement(p.settlement_data));
        return null;
      },
    }),
    method({
      name: 'update_pending_remote_settlement',
      module: 'watchtower',
      description: "Watchtower: records the settlement data of the peer's pending commitment.",
      result: R.nullResult,
      params: z.object({ channel_id: h256, settlement_data: settlementData }),
      handler: (p, ctx) => {
        const nodeId = callerOf(ctx);
        store.updatePendingRemoteSettlement(nodeId, p.channel_id, toSettlement(p.settlement_data));
        return null;
      },
    }),
    method({
      name: 'update_local_settlement',
      module: 'watchtower',
      description: "Watchtower: records the settlement data of the caller's latest commitment.",
      result: R.nullResult,
      params: z.object({ channel_id: h256, settlement_data: settlementData }),
      handler: (p, ctx) => {
        const nodeId = callerOf(ctx);
        store.updateLocalSettlement(nodeId, p.channel_id, toSettlement(p.settlement_data));
        return null;
      },
    }),
    method({
      name: 'create_preimage',
      module: 'watchtower',
      description: 'Watchtower: stores a payment preimage so that a TLC can be claimed on chain.',
      result: R.nullResult,
      params: z.object({ payment_hash: h256, preimage: h256 }),
      handler: (p, ctx) => {
        const nodeId = callerOf(ctx);
        const pre = Buffer.from(p.preimage.slice(2), 'hex');
        const ok = [ckbHash(pre), sha256(pre)].some(
          (h) => `0x${Buffer.from(h).toString('hex')}` === p.payment_hash,
        );
        if (!ok) throw new WatchtowerError('WrongPreimage', 'Wrong preimage');
        store.insertPreimage(nodeId, p.payment_hash, p.preimage);
        return null;
      },
    }),
    method({
      name: 'remove_preimage',
      module: 'watchtower',
      description: 'Watchtower: forgets a stored preimage.',
      result: R.nullResult,
      params: z.object({ payment_hash: h256 }),
      handler: (p, ctx) => {
        store.removePreimage(callerOf(ctx), p.payment_hash);
        return null;
      },
    }),
  ];
}
