/**
 * The channel service seen through the payment relay's port: channels found by funding
 * transaction, our forwarding policy on each, and TLCs added, fulfilled and failed.
 */

import type { ChannelService } from '../channel/service.ts';
import type { Channel } from '../channel/state.ts';
import { hexToBytes } from '../codec/hex.ts';
import type { ChannelTlcPort, ForwardPolicy } from './relay.ts';

export function policyOf(ch: Channel): ForwardPolicy {
  return {
    feeRate: ch.tlcFeeProportionalMillionths,
    tlcMinValue: ch.tlcMinValue,
    tlcExpiryDelta: ch.tlcExpiryDelta,
    enabled: ch.enabled,
    udt: ch.udt ? JSON.stringify(ch.udt) : null,
    channelOutpoint: `${ch.fundingTxHash}00000000`,
  };
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
    fulfilTlc: (channelId, tlcId, preimage) => channels.removeTlc(channelId, tlcId, { preimage }),
    failTlc: (channelId, tlcId, errorPacket) => channels.removeTlc(channelId, tlcId, { error: errorPacket }),
  };
}
