/**
 * TLC expiry, pure: what a periodic check of one channel must do so that a TLC nearing its
 * expiry never costs us money (the reference's `CheckChannels` in network.rs, every 60 s):
 * - an offered TLC the peer has neither fulfilled nor failed (committed, removal not confirmed),
 *   expiring within 2/3 of the commitment delay: force close, so that our commitment is on chain
 *   and the TLC can be taken back by expiry once the delay allows it (`get_expired_offered_tlcs`);
 * - a received TLC whose preimage we gave (our fulfil not yet acknowledged) expiring within the
 *   same margin: force close too, so the preimage claims it on chain before the offerer can take
 *   it back by expiry (a Strand addition: v0.8 only retries the off-chain fulfil);
 * - a received TLC with a preimage we know but have not used yet: fulfil it (the reference's retry
 *   of RemoveTlc with the stored preimage);
 * - a received TLC we did not forward, expiring within the margin plus one check interval: fail it
 *   upstream with ExpiryTooSoon before the offerer has to force-close (hold invoices, for one).
 * Margin: `tlc_expiry_delay` = 2/3 × the commitment delay in epochs × the milliseconds of an epoch
 * (4 h on mainnet and testnet; 2 s on a dev chain, as the reference's debug builds assume).
 */
import { type Channel, resolvingPending, type Tlc } from './state.ts';

export { MS_PER_EPOCH_DEV, MS_PER_EPOCH_MAINNET } from '../codec/index.ts';
/** The reference's CHECK_CHANNELS_INTERVAL (3 s in its debug builds). */
export const CHECK_CHANNELS_INTERVAL_MS = 60_000;

export interface ExpiryPolicy {
  msPerEpoch: number;
  checkIntervalMs: number;
}

export type ExpiryAction =
  | { type: 'forceClose'; reason: string; tlcIds: bigint[] }
  | { type: 'fulfil'; tlc: Tlc; preimage: string }
  | { type: 'failReceived'; tlc: Tlc };

/** 2/3 of a relative-epoch delay (`number | index << 24 | length << 40`), in milliseconds. */
export function tlcExpiryDelay(delayEpoch: bigint, msPerEpoch: number): bigint {
  const number = delayEpoch & 0xff_ffffn;
  const index = (delayEpoch >> 24n) & 0xffffn;
  const length = (delayEpoch >> 40n) & 0xffffn;
  // (number + index / length) × ms × 2/3, in integers: one floor at the end.
  const den = length === 0n ? 1n : length;
  const whole = number * den + (length === 0n ? 0n : index);
  return (whole * BigInt(msPerEpoch) * 2n) / (3n * den);
}

/** What the payments layer knows of received TLCs. */
export interface TlcKnowledge {
  /** The preimage to fulfil a received TLC with, once the node has decided to (paid invoice, keysend, forward). */
  preimageFor?: (channelId: string, t: Tlc) => string | undefined;
  /** The TLC went on to a next hop: its fate is decided downstream, not by its expiry here. */
  forwarded?: (channelId: string, t: Tlc) => boolean;
}

/** The actions one check takes on `ch` at `now` (ms). */
export function checkTlcExpiry(
  ch: Channel,
  now: number,
  policy: ExpiryPolicy,
  known: TlcKnowledge = {},
): ExpiryAction[] {
  if (ch.state !== 'CHANNEL_READY' && !resolvingPending(ch)) return [];
  const margin = tlcExpiryDelay(ch.delayEpoch, policy.msPerEpoch);
  const soon = BigInt(now) + margin;
  const offered = ch.tlcs.filter((t) => t.offered && t.added === 'committed' && t.expiry < soon);
  const claimable = ch.tlcs.filter((t) => !t.offered && !!t.removal?.preimage && t.expiry < soon);
  if (offered.length || claimable.length) {
    const reason = offered.length
      ? `offered TLC ${offered.map((t) => t.id).join(', ')} expires at ${offered[0]?.expiry} before the peer resolved it`
      : `received TLC ${claimable.map((t) => t.id).join(', ')} must be claimed on chain before its expiry`;
    return [{ type: 'forceClose', reason, tlcIds: [...offered, ...claimable].map((t) => t.id) }];
  }
  const actions: ExpiryAction[] = [];
  const failBefore = soon + BigInt(policy.checkIntervalMs);
  for (const t of ch.tlcs) {
    if (t.offered || t.added !== 'committed' || t.removal) continue;
    const preimage = known.preimageFor?.(ch.id, t);
    if (preimage) actions.push({ type: 'fulfil', tlc: t, preimage });
    else if (t.expiry < failBefore && !known.forwarded?.(ch.id, t))
      actions.push({ type: 'failReceived', tlc: t });
  }
  return actions;
}
