/**
 * A preimage learned on chain settles what it can off chain: every TLC a peer offered us with
 * that payment hash, still pending in a live channel, is fulfilled — so a node that forwarded a
 * payment whose next hop claimed it on chain gets paid by the previous hop too.
 */
import { ccc } from '@ckb-ccc/core';
import type { RemoveReason } from '../channel/index.ts';
import { type Channel, resolvingPending } from '../channel/index.ts';
import type { WatchLogger } from './watcher.ts';

export interface UpstreamChannels {
  list(): Channel[];
  removeTlc(channelId: string, tlcId: bigint, reason: RemoveReason): Promise<void>;
}

export async function fulfilReceivedTlcs(
  channels: UpstreamChannels,
  paymentHash: string,
  preimage: string,
  log?: WatchLogger,
): Promise<number> {
  let n = 0;
  for (const ch of channels.list()) {
    // A channel shutting down still resolves its pending TLCs off chain.
    if (ch.state !== 'CHANNEL_READY' && !resolvingPending(ch)) continue;
    for (const t of ch.tlcs) {
      if (t.offered || t.removal || t.paymentHash.toLowerCase() !== paymentHash.toLowerCase()) continue;
      try {
        await channels.removeTlc(ch.id, t.id, { preimage: ccc.bytesFrom(preimage) });
        n++;
      } catch (e) {
        log?.warn(
          { channel_id: ch.id, tlc_id: String(t.id), err: (e as Error).message },
          'upstream fulfil failed',
        );
      }
    }
  }
  return n;
}
