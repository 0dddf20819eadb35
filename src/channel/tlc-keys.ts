/**
 * Per-TLC keys, as the reference derives them (`fiber-channel-protocol.md` §2 "TLC keys"): a TLC
 * created (offered or received) when the commitment numbers were `(L, R)` is locked in both
 * commitments to
 * - our key: `tlc_base_key + H(our_point(R))`,
 * - the peer's key: `their_tlc_basepoint + H(their_point(L))`,
 * where `their_point(L)` is the per-commitment point the peer gave for number L (Open/Accept give
 * 1 and 2, each RevokeAndAck the next). Both sides agree because a TLC is only created between
 * rounds, when one side's L is the other's R. A key thus serves the TLCs created between two
 * rounds only (a batch's updates share it): signing a claim of one says nothing about those of
 * other rounds.
 *
 * The two public keys are computed once, when the TLC is created, and kept with it; the secret is
 * derived again from the channel seed when a claim is signed (`tlcSecret`).
 *
 * Channels stored before Strand tweaked TLC keys have no numbered point list: their TLCs keep
 * the untweaked base keys (both sides of such a channel run the same rule).
 */
import { bytesToHex, hexToBytes } from '../codec/index.ts';
import { type ChannelKeys, commitmentPoint, tweakPubkey, tweakSecret } from './keys.ts';
import type { Channel, Hex, PartyParams, Tlc } from './state.ts';

const b = (x: string) => hexToBytes(x);
const h = (x: Uint8Array): Hex => bytesToHex(x);

/** How many of the peer's latest points are kept: a new TLC needs only the current L's. */
const KEEP_POINTS = 4;

export type TlcKeyFields = Pick<Tlc, 'createdAt' | 'localKey' | 'remoteKey'>;

/** The peer's per-commitment point for number n, or null when we do not hold it. */
export function remotePointAt(ch: Channel, n: bigint): Uint8Array | null {
  const p = ch.remote?.commitmentPoints?.find((x) => x.n === n);
  return p ? b(p.point) : null;
}

/** The peer's first two points, numbered 1 and 2 (from OpenChannel / AcceptChannel). */
export function firstRemotePoints(first: Uint8Array, second: Uint8Array): { n: bigint; point: Hex }[] {
  return [
    { n: 1n, point: h(first) },
    { n: 2n, point: h(second) },
  ];
}

/** The channel once the peer's RevokeAndAck gave its point for number `n` (our L after it). */
export function withRemotePoint(ch: Channel, n: bigint, point: Uint8Array): Channel {
  const r = ch.remote;
  if (!r?.commitmentPoints) return ch; // a channel from before tweaked keys: none kept
  const commitmentPoints = [...r.commitmentPoints.filter((x) => x.n !== n), { n, point: h(point) }].slice(
    -KEEP_POINTS,
  );
  return { ...ch, remote: { ...r, commitmentPoints } };
}

/**
 * The key fields of a TLC created now, or `null` when the peer's point for the current L is
 * missing (a protocol fault of the peer's). Empty for a channel from before tweaked keys.
 */
export function newTlcKeys(ch: Channel, keysOf: () => ChannelKeys): TlcKeyFields | null {
  const r = ch.remote;
  if (!r?.commitmentPoints) return {};
  const { local: L, remote: R } = ch.commitmentNumbers;
  const theirPoint = remotePointAt(ch, L);
  if (!theirPoint) return null;
  // Every TLC created between the same two rounds has the same keys: a batch of n updates
  // derives them once, not n times (two point multiplications and additions each).
  const id = `${ch.seed}:${R}:${r.tlcBasepoint}:${h(theirPoint)}`;
  let pair = recentKeys.get(id);
  if (!pair) {
    const keys = keysOf();
    pair = {
      localKey: h(tweakPubkey(keys.tlcBasepoint, commitmentPoint(keys.commitmentSeed, R))),
      remoteKey: h(tweakPubkey(b(r.tlcBasepoint), theirPoint)),
    };
    if (recentKeys.size >= RECENT_KEYS) recentKeys.delete(recentKeys.keys().next().value as string);
    recentKeys.set(id, pair);
  }
  return { createdAt: { local: L, remote: R }, ...pair };
}

/**
 * The TLC keys derived last, by all they depend on (the channel's seed, our number R, the peer's
 * base point and its point for L), oldest first: one entry per channel that made TLCs lately.
 */
const recentKeys = new Map<string, { localKey: Hex; remoteKey: Hex }>();
const RECENT_KEYS = 1_024;

/** Our and the peer's public keys for a TLC (the base points for a TLC from before tweaking). */
export function tlcPubkeys(ch: Channel, t: Tlc): { local: Uint8Array; remote: Uint8Array } {
  const k = tlcPubkeysHex(ch, t);
  return { local: b(k.local), remote: b(k.remote) };
}

/** `tlcPubkeys` as hex, as the state keeps them. */
export function tlcPubkeysHex(ch: Channel, t: Tlc): { local: string; remote: string } {
  return {
    local: t.localKey ?? ch.local.tlcBasepoint,
    remote: t.remoteKey ?? (ch.remote as PartyParams).tlcBasepoint,
  };
}

/** Our secret key for a TLC: what signs its claim on chain. */
export function tlcSecret(keys: ChannelKeys, t: Pick<Tlc, 'createdAt' | 'keyTag'>): Uint8Array {
  if (t.keyTag) return tweakSecret(keys.tlcBaseKey, b(t.keyTag));
  if (!t.createdAt) return keys.tlcBaseKey;
  return tweakSecret(keys.tlcBaseKey, commitmentPoint(keys.commitmentSeed, t.createdAt.remote));
}

/**
 * Pipelined channels: the keys of a TLC. There a TLC is not created between rounds, so the two
 * sides may hold different commitment numbers when it is announced, and per-commitment points
 * cannot name its keys. Both keys are tweaked instead by one public tag both sides know: the
 * offerer's funding key and `group`, the number of the first of the receiver's commitments that
 * can hold the add (one past the offerer's last CommitmentSigned before it; the receiver counts
 * those, which precede the add on the wire). A reconnection sends an add again just before the
 * CommitmentSigned that covers it, so the number holds whatever else the replay reorders.
 * Like the points, the tag keeps the keys of TLCs of different groups apart; the tag is not
 * 33 bytes, so it can never be taken for a point.
 */
export function pipelinedTlcKeys(
  ch: Channel,
  offeredByUs: boolean,
  group: bigint,
  keysOf: () => ChannelKeys,
): TlcKeyFields & { keyTag: Hex } {
  const r = ch.remote as PartyParams;
  const offerer = offeredByUs ? ch.local.fundingPubkey : r.fundingPubkey;
  const keyTag = `0x${Buffer.from('strand/pipelined-tlc').toString('hex')}${offerer.slice(2)}${group.toString(16).padStart(16, '0')}`;
  const id = `${ch.seed}:${keyTag}`;
  let pair = recentKeys.get(id);
  if (!pair) {
    pair = {
      localKey: h(tweakPubkey(keysOf().tlcBasepoint, b(keyTag))),
      remoteKey: h(tweakPubkey(b(r.tlcBasepoint), b(keyTag))),
    };
    if (recentKeys.size >= RECENT_KEYS) recentKeys.delete(recentKeys.keys().next().value as string);
    recentKeys.set(id, pair);
  }
  return { keyTag, ...pair };
}
