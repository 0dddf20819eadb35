/**
 * `channel` module: open_channel, accept_channel, abandon_channel, list_channels, shutdown_channel,
 * update_channel
 * (fiber-rpc.md §1.3, §2.1; error texts §5.2). Counterparty by the seed's `peer_id` (a `Qm…` id or
 * a pubkey) or v0.8's `pubkey`; records carry both, state names and flags as the seed writes them.
 */
import { ccc } from '@ckb-ccc/core';
import { z } from 'zod';
import type { Channel, ChannelService, OpenRequest, ScriptData } from '../../channel/index.ts';
import { ChannelError } from '../../channel/index.ts';
import { hexToBytes, InvalidParams, toHexQuantity as q } from '../../codec/index.ts';
import { peerIdOf } from '../../crypto/index.ts';
import { checkChannelTerms } from '../limits.ts';
import { type MethodSpec, method } from '../method.ts';
import * as R from '../results.ts';
import { echo, h256, pubkey, script, u64, u128 } from '../schema.ts';

export interface ChannelPeers {
  list(): { pubkey: string; peerId: string }[];
}

export const openParams = z.object({
  peer_id: z.string().optional(),
  pubkey: z.string().optional(),
  funding_amount: u128,
  public: z.boolean().optional(),
  one_way: z.boolean().optional(),
  funding_udt_type_script: script.nullish(),
  shutdown_script: script.optional(),
  commitment_delay_epoch: u64.optional(),
  commitment_fee_rate: u64.optional(),
  funding_fee_rate: u64.optional(),
  tlc_expiry_delta: u64.optional(),
  tlc_min_value: u128.optional(),
  tlc_fee_proportional_millionths: u128.optional(),
  max_tlc_value_in_flight: u128.optional(),
  max_tlc_number_in_flight: u64.optional(),
});

const acceptParams = z.object({
  temporary_channel_id: h256,
  funding_amount: u128,
  shutdown_script: script.optional(),
  max_tlc_value_in_flight: u128.optional(),
  max_tlc_number_in_flight: u64.optional(),
  tlc_min_value: u128.optional(),
  tlc_fee_proportional_millionths: u128.optional(),
  tlc_expiry_delta: u64.optional(),
});

const listParams = z.object({
  peer_id: z.string().optional(),
  pubkey: z.string().optional(),
  include_closed: z.boolean().optional(),
  only_pending: z.boolean().optional(),
});

const updateParams = z.object({
  channel_id: h256,
  enabled: z.boolean().optional(),
  tlc_expiry_delta: u64.optional(),
  tlc_minimum_value: u128.optional(),
  tlc_fee_proportional_millionths: u128.optional(),
});

const PUBKEY_HEX = /^(0x)?0[23][0-9a-fA-F]{64}$/;

type ScriptJson = z.output<typeof script>;
const toCcc = (s: ScriptJson) =>
  ccc.Script.from({ codeHash: s.code_hash, hashType: s.hash_type, args: s.args });
export const scriptJson = (s: ScriptData) => ({ code_hash: s.codeHash, hash_type: s.hashType, args: s.args });

/** The terms `open_channel` and `open_channel_with_external_funding` share, as the service takes them. */
export function openTerms(p: z.output<typeof openParams>): Omit<OpenRequest, 'pubkey' | 'external'> {
  checkChannelTerms(p, !p.funding_udt_type_script);
  return {
    fundingAmount: p.funding_amount,
    isPublic: p.public,
    fundingUdtTypeScript: p.funding_udt_type_script ? toCcc(p.funding_udt_type_script) : null,
    shutdownScript: p.shutdown_script ? toCcc(p.shutdown_script) : undefined,
    commitmentDelayEpoch: p.commitment_delay_epoch,
    commitmentFeeRate: p.commitment_fee_rate,
    fundingFeeRate: p.funding_fee_rate,
    tlcExpiryDelta: p.tlc_expiry_delta,
    tlcMinValue: p.tlc_min_value,
    tlcFeeProportionalMillionths: p.tlc_fee_proportional_millionths,
    maxTlcValueInFlight: p.max_tlc_value_in_flight,
    maxTlcNumberInFlight: p.max_tlc_number_in_flight,
  };
}

/** A channel record: every seed field, plus the reference's extra ones. */
export function channelJson(ch: Channel) {
  const pk = ch.peer;
  const pending = ch.tlcs.filter((t) => !t.removal);
  return {
    channel_id: ch.id,
    is_public: ch.isPublic,
    is_acceptor: ch.isAcceptor,
    is_one_way: false,
    channel_outpoint: ch.fundingTxHash ? `${ch.fundingTxHash}00000000` : null,
    peer_id: peerIdOf(hexToBytes(`0x${pk}`)),
    pubkey: pk,
    funding_udt_type_script: ch.udt ? scriptJson(ch.udt) : null,
    state: { state_name: ch.state, state_flags: ch.flags },
    local_balance: q(ch.localBalance),
    offered_tlc_balance: q(pending.filter((t) => t.offered).reduce((x, t) => x + t.amount, 0n)),
    remote_balance: q(ch.remoteBalance),
    received_tlc_balance: q(pending.filter((t) => !t.offered).reduce((x, t) => x + t.amount, 0n)),
    pending_tlcs: pending.map((t) => ({
      id: q(t.id),
      amount: q(t.amount),
      payment_hash: t.paymentHash,
      expiry: q(t.expiry),
      forwarding_channel_id: null,
      forwarding_tlc_id: null,
      status: t.offered
        ? { Outbound: t.added === 'committed' ? 'Committed' : 'LocalAnnounced' }
        : { Inbound: t.added === 'committed' ? 'Committed' : 'RemoteAnnounced' },
    })),
    latest_commitment_transaction_hash: ch.latestCommitmentTxHash,
    created_at: q(ch.createdAt),
    // A closed channel forwards nothing, whatever its last policy said.
    enabled: ch.enabled && ch.state !== 'CLOSED',
    tlc_expiry_delta: q(ch.tlcExpiryDelta),
    tlc_fee_proportional_millionths: q(ch.tlcFeeProportionalMillionths),
    shutdown_transaction_hash: ch.shutdownTxHash,
    failure_detail: ch.failureDetail,
  };
}

const PENDING = new Set([
  'NEGOTIATING_FUNDING',
  'COLLABORATING_FUNDING_TX',
  'SIGNING_COMMITMENT',
  'AWAITING_TX_SIGNATURES',
  'AWAITING_CHANNEL_READY',
]);

export function channelMethods(svc: ChannelService, peers: ChannelPeers): MethodSpec[] {
  /** `peer_id` (Qm… or a pubkey) and/or `pubkey` → the pubkey; both must agree. */
  const counterparty = (p: { peer_id?: string; pubkey?: string }, required: boolean): string | undefined => {
    let byPubkey: string | undefined;
    if (p.pubkey !== undefined) {
      const r = pubkey.safeParse(p.pubkey);
      if (!r.success)
        throw new InvalidParams(
          `invalid pubkey '${echo(p.pubkey)}': expected a 33-byte compressed public key`,
        );
      byPubkey = r.data;
    }
    let byPeerId: string | undefined;
    if (p.peer_id !== undefined) {
      if (PUBKEY_HEX.test(p.peer_id)) byPeerId = p.peer_id.replace(/^0x/, '').toLowerCase();
      else if (/^Qm[1-9A-HJ-NP-Za-km-z]{44}$/.test(p.peer_id)) {
        const found = peers.list().find((x) => x.peerId === p.peer_id);
        byPeerId = found?.pubkey;
        if (!byPeerId) {
          if (!required) byPeerId = `peer:${p.peer_id}`;
          else
            throw new ChannelError(
              'PeerFeaturesUnknown',
              `Invalid parameter: Peer ${p.peer_id}'s feature not found, waiting for peer to send Init message`,
            );
        }
      } else
        throw new InvalidParams(`invalid peer_id '${echo(p.peer_id)}': expected a Qm… peer id or a pubkey`);
    }
    if (byPubkey && byPeerId && byPubkey !== byPeerId)
      throw new InvalidParams('peer_id and pubkey name different nodes');
    const pk = byPubkey ?? byPeerId;
    if (!pk && required) throw new InvalidParams('peer_id: missing required field');
    return pk;
  };

  return [
    method({
      name: 'open_channel',
      module: 'channel',
      description:
        'Opens a channel with a connected peer, funded with `funding_amount` of CKB (shannons) or of the UDT in `funding_udt_type_script`. Answers the temporary channel id; the channel is usable once `list_channels` shows it ready.',
      result: z.strictObject({ temporary_channel_id: R.hash }),
      params: openParams,
      handler: async (p) => {
        if (p.one_way && p.public !== false)
          throw new ChannelError(
            'InvalidParameter',
            'Invalid parameter: An one-way channel cannot be public',
          );
        const terms = openTerms(p);
        const pk = counterparty(p, true) as string;
        const r = await svc.openChannel({ pubkey: pk, ...terms });
        return { temporary_channel_id: r.temporaryChannelId };
      },
    }),
    method({
      name: 'accept_channel',
      module: 'channel',
      description:
        'Accepts a channel a peer offered (when it was not auto-accepted), adding `funding_amount`. Answers the final channel id.',
      result: z.strictObject({ channel_id: R.hash }),
      params: acceptParams,
      handler: async (p) => {
        // CKB limits only for a channel known to be funded in CKB.
        const pending = svc.get(p.temporary_channel_id);
        checkChannelTerms(p, pending !== undefined && !pending.udt);
        const r = await svc.acceptChannel({
          temporaryChannelId: p.temporary_channel_id,
          fundingAmount: p.funding_amount,
          shutdownScript: p.shutdown_script ? toCcc(p.shutdown_script) : undefined,
          maxTlcValueInFlight: p.max_tlc_value_in_flight,
          maxTlcNumberInFlight: p.max_tlc_number_in_flight,
          tlcExpiryDelta: p.tlc_expiry_delta,
          tlcMinValue: p.tlc_min_value,
          tlcFeeProportionalMillionths: p.tlc_fee_proportional_millionths,
        });
        return { channel_id: r.channelId };
      },
    }),
    method({
      name: 'abandon_channel',
      module: 'channel',
      description:
        'Forgets a channel that is still opening (before our funding signatures are sent); its funds were never locked.',
      result: R.nullResult,
      params: z.object({ channel_id: h256 }),
      handler: async (p) => {
        await svc.abandonChannel(p.channel_id);
        return null;
      },
    }),
    method({
      name: 'list_channels',
      module: 'channel',
      description:
        'The channels, newest first, optionally of one peer; closed ones with `include_closed`, only the opening (or failed opening) ones with `only_pending`.',
      result: R.listChannelsResult,
      examples: [{ name: 'a node without channels', params: {}, result: { channels: [] } }],
      params: listParams,
      handler: (p) => {
        if (p.only_pending && p.include_closed)
          throw new InvalidParams('only_pending and include_closed are mutually exclusive');
        const pk = counterparty(p, false);
        const channels = svc.list().filter((ch) => {
          if (pk && ch.peer !== pk) return false;
          if (p.only_pending)
            return (
              PENDING.has(ch.state) ||
              (ch.state === 'CLOSED' &&
                (ch.flags.includes('ABANDONED') || ch.flags.includes('FUNDING_ABORTED')))
            );
          if (ch.state === 'CLOSED') return p.include_closed === true;
          return true;
        });
        return { channels: channels.map(channelJson) };
      },
    }),
    method({
      name: 'shutdown_channel',
      module: 'channel',
      description:
        'Closes a channel: cooperatively (optional `close_script`, `fee_rate`), or with `force` by publishing the latest commitment transaction.',
      result: R.nullResult,
      params: z.object({
        channel_id: h256,
        close_script: script.optional(),
        fee_rate: u64.optional(),
        force: z.boolean().optional(),
      }),
      handler: async (p) => {
        checkChannelTerms(p, false);
        await svc.shutdownChannel(p.channel_id, {
          closeScript: p.close_script ? toCcc(p.close_script) : undefined,
          feeRate: p.fee_rate,
          force: p.force,
        });
        return null;
      },
    }),
    method({
      name: 'update_channel',
      module: 'channel',
      description:
        "Changes a public channel's forwarding terms (`enabled`, `tlc_expiry_delta`, `tlc_minimum_value`, `tlc_fee_proportional_millionths`) and announces them.",
      result: R.nullResult,
      params: updateParams,
      handler: async (p) => {
        const ch = svc.get(p.channel_id);
        checkChannelTerms(p, ch !== undefined && !ch.udt);
        await svc.updateChannel(p.channel_id, {
          enabled: p.enabled,
          tlcExpiryDelta: p.tlc_expiry_delta,
          tlcMinimumValue: p.tlc_minimum_value,
          tlcFeeProportionalMillionths: p.tlc_fee_proportional_millionths,
        });
        return null;
      },
    }),
  ];
}
