/**
 * Composition glue: the channel layer signs public channels' announcements; the graph layer
 * defines the ChannelAnnouncement message and takes the completed one into the network graph
 * (and gossips it). Kept here because channel/ may not import graph/.
 */
import type { AnnouncementHooks, AnnouncementInfo, Channel } from '../channel/index.ts';
import { bytesToHex, HASH_TYPE_BYTE, hexToBytes } from '../codec/index.ts';
import type { ChannelAnnouncement, GraphService } from '../graph/index.ts';
import {
  channelAnnouncementDigest,
  completeChannelAnnouncement,
  unsignedChannelAnnouncement,
} from '../graph/index.ts';

function build(i: AnnouncementInfo): ChannelAnnouncement {
  return unsignedChannelAnnouncement({
    chainHash: i.chainHash,
    channelOutpoint: i.channelOutpoint,
    localPubkey: i.localPubkey,
    remotePubkey: i.remotePubkey,
    fundingXOnlyKey: i.fundingXOnlyKey,
    capacity: i.capacity,
    udtTypeScript: i.udtTypeScript
      ? {
          codeHash: hexToBytes(i.udtTypeScript.codeHash),
          hashType: HASH_TYPE_BYTE[i.udtTypeScript.hashType] ?? 0,
          args: hexToBytes(i.udtTypeScript.args),
        }
      : null,
  });
}

/** Our forwarding policy on a channel, by funding tx hash (for the ChannelUpdate). */
export type PolicyLookup = (
  fundingTxHash: string,
) => { tlcExpiryDelta: bigint; tlcMinValue: bigint; feeRate: bigint; enabled: boolean } | undefined;

export function channelAnnouncementHooks(graph: GraphService, policyOf: PolicyLookup): AnnouncementHooks {
  return {
    digest: (i) => channelAnnouncementDigest(build(i)),
    async publish(i, s) {
      await graph.processBroadcast({
        type: 'ChannelAnnouncement',
        value: completeChannelAnnouncement(build(i), {
          localPubkey: i.localPubkey,
          localNodeSignature: s.localNodeSignature,
          remoteNodeSignature: s.remoteNodeSignature,
          ckbSignature: s.ckbSignature,
        }),
      });
      // Our direction of the channel: without it nobody routes through us.
      const p = policyOf(bytesToHex(i.channelOutpoint.txHash));
      if (!p) return;
      await graph.broadcastOwnChannelUpdate({
        peer: bytesToHex(i.remotePubkey, false),
        channelOutpoint: i.channelOutpoint,
        channelFlags: p.enabled ? 0 : 1,
        tlcExpiryDelta: p.tlcExpiryDelta,
        tlcMinimumValue: p.tlcMinValue,
        tlcMaximumValue: 0n,
        feeRate: p.feeRate,
      });
    },
  };
}

/**
 * After `update_channel`: our direction of an announced public channel, signed anew with the new
 * policy and gossiped (the reference's `on_owned_channel_updated` → `broadcast_channel_update`).
 */
export async function broadcastOwnPolicy(graph: GraphService, ch: Channel): Promise<void> {
  if (!ch.isPublic || !ch.fundingTxHash || !ch.announcement?.signature) return;
  await graph.broadcastOwnChannelUpdate({
    peer: ch.peer,
    channelOutpoint: { txHash: hexToBytes(ch.fundingTxHash), index: 0 },
    channelFlags: ch.enabled ? 0 : 1,
    tlcExpiryDelta: ch.tlcExpiryDelta,
    tlcMinimumValue: ch.tlcMinValue,
    tlcMaximumValue: 0n,
    feeRate: ch.tlcFeeProportionalMillionths,
  });
}

/**
 * A channel of ours that is closing or closed leaves our routing at once and, when it was
 * announced, the network learns it through our direction's ChannelUpdate with the disabled flag
 * (others would otherwise keep routing into it until their next failure or the 28-day prune).
 */
export function channelClosingHook(graph: GraphService, log: (err: Error) => void): (ch: Channel) => void {
  const done = new Set<string>();
  return (ch) => {
    if ((ch.state !== 'SHUTTING_DOWN' && ch.state !== 'CLOSED') || !ch.fundingTxHash) return;
    if (done.has(ch.fundingTxHash)) return;
    done.add(ch.fundingTxHash);
    const outpoint = `${ch.fundingTxHash}00000000`;
    broadcastOwnPolicy(graph, { ...ch, enabled: false })
      .catch(log)
      .finally(() => graph.ownChannelDown(outpoint));
  };
}
