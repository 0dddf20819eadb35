/**
 * The channel service seen through the payment relay's port: channels found by funding
 * transaction, our forwarding policy on each, and TLCs added, fulfilled and failed.
 */

import type { ChannelService } from '../channel/index.ts';
import { type Channel, dec, resolvingPending } from '../channel/index.ts';
import { bytesToHex, hexToBytes } from '../codec/index.ts';
import type { ChannelTlcPort, ForwardPolicy, IncomingTlc } from './relay.ts';
import { onionKeyOf } from './resume.ts';

export function policyOf(ch: Channel): ForwardPolicy {
  return {
    feeRate: ch.tlcFeeProportionalMillionths,
    tlcMinValue: ch.tlcMinValue,
    tlcExpiryDelta: ch.tlcExpiryDelta,
    enabled: ch.enabled,
    udt: ch.udt ? JSON.stringify(ch.udt) : null,
    udtScript: ch.udt ? { code_hash: ch.udt.codeHash, hash_type: ch.udt.hashType, args: ch.udt.args } : null,
    channelOutpoint: `${ch.fundingTxHash}00000000`,
  };
}

/**
 * The TLCs we offered that the channel holds, or will re-send: those its state lists, and those
 * stepped back after a collided round (`retry`), which keep their id.
 */
export function offeredBy(
  ch: Channel,
): { channelId: string; tlcId: bigint; paymentHash: string; amount: bigint; onionKey: string }[] {
  const out = ch.tlcs
    .filter((t) => t.offered)
    .map((t) => ({
      channelId: ch.id,
      tlcId: t.id,
      paymentHash: t.paymentHash,
      amount: t.amount,
      onionKey: onionKeyOf(t.onion),
    }));
  for (const m of (ch.retry ?? []).map(dec)) {
    if (m.type !== 'AddTlc') continue;
    out.push({
      channelId: ch.id,
      tlcId: m.value.tlcId,
      paymentHash: bytesToHex(m.value.paymentHash),
      amount: m.value.amount,
      onionKey: onionKeyOf(m.value.onionPacket),
    });
  }
  return out;
}

/**
 * The TLCs the peer offered on `ch` that both commitments hold, with an onion, and that nothing
 * is removing: no removal in the channel state, none stepped back for re-sending (`retry`). Only
 * on a channel that may still remove TLCs (ready, or shutting down with TLCs to resolve).
 */
export function unresolvedReceivedOf(ch: Channel): IncomingTlc[] {
  if (ch.state !== 'CHANNEL_READY' && !resolvingPending(ch)) return [];
  const removing = new Set<bigint>();
  for (const m of (ch.retry ?? []).map(dec)) if (m.type === 'RemoveTlc') removing.add(m.value.tlcId);
  return ch.tlcs
    .filter(
      (t) => !t.offered && t.added === 'committed' && !t.removal && t.onion.length > 0 && !removing.has(t.id),
    )
    .map((t) => ({
      channelId: ch.id,
      tlcId: t.id,
      amount: t.amount,
      paymentHash: t.paymentHash,
      expiry: t.expiry,
      hashAlgorithm: t.hashAlgorithm,
      onion: t.onion,
    }));
}

export function channelTlcPort(channels: ChannelService): ChannelTlcPort {
  return {
    channelByFundingTx(txHash) {
      const ch = channels.store
        .list()
        .find((c) => c.fundingTxHash === txHash.toLowerCase() && c.state === 'CHANNEL_READY');
      return ch ? { channelId: ch.id, policy: policyOf(ch) } : undefined;
    },
    policyOf(channelId) {
      const ch = channels.store.get(channelId);
      return ch ? policyOf(ch) : undefined;
    },
    async addTlc(channelId, t) {
      const { tlcId } = await channels.addTlc(channelId, {
        amount: t.amount,
        paymentHash: hexToBytes(t.paymentHash),
        expiry: t.expiry,
        hashAlgorithm: t.hashAlgorithm,
        onion: t.onion,
      });
      return tlcId;
    },
    offeredTlcs(channelOutpoint) {
      const tx = channelOutpoint.slice(0, 66).toLowerCase();
      return channels.store
        .list()
        .filter((c) => c.fundingTxHash === tx)
        .flatMap((c) => offeredBy(c));
    },
    unresolvedReceived: () => channels.store.list().flatMap((c) => unresolvedReceivedOf(c)),
    // Behind a round the peer has yet to answer (it may be reconnecting), a removal waits for it
    // and goes out as soon as the round ends, instead of being refused.
    fulfilTlc: (channelId, tlcId, preimage) =>
      channels.removeTlc(channelId, tlcId, { preimage }, { waitMs: Number.POSITIVE_INFINITY }),
    failTlc: (channelId, tlcId, errorPacket) =>
      channels.removeTlc(channelId, tlcId, { error: errorPacket }, { waitMs: Number.POSITIVE_INFINITY }),
  };
}
