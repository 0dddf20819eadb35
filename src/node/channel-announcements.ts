/**
 * Composition glue: the channel layer signs public channels' announcements; the graph layer
 * defines the ChannelAnnouncement message and takes the completed one into the network graph
 * (and gossips it). Kept here because channel/ may not import graph/.
 */
import type { AnnouncementHooks, AnnouncementInfo } from '../channel/service.ts';
import { hexToBytes } from '../codec/hex.ts';
import type { ChannelAnnouncement } from '../graph/messages.ts';
import type { GraphService } from '../graph/service.ts';
import {
  channelAnnouncementDigest,
  completeChannelAnnouncement,
  unsignedChannelAnnouncement,
} from '../graph/signing.ts';

const HASH_TYPES: Record<string, number> = { data: 0, type: 1, data1: 2, data2: 4 };

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
          hashType: HASH_TYPES[i.udtTypeScript.hashType] ?? 0,
          args: hexToBytes(i.udtTypeScript.args),
        }
      : null,
  });
}

export function channelAnnouncementHooks(graph: GraphService): AnnouncementHooks {
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
    },
  };
}
