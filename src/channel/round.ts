/**
 * A TLC round's memory of itself, pure: what our round sent, kept to replay after a reconnect
 * (`Channel.cache`, as references to the TLCs that hold the messages' fields), and what it
 * changed, kept to step back when the peer's round collides with ours (`round.before`).
 */
import { bytesToHex, hexToBytes } from '../codec/index.ts';
import { decodeFiberMessage, encodeFiberMessage } from '../p2p/index.ts';
import { ChannelError } from './errors.ts';
import { isFnn } from './fnn-revoke.ts';
import {
  type Channel,
  deserializeChannel,
  type Hex,
  type PartyParams,
  type RoundSnapshot,
  tlcKey,
  withOnions,
} from './state.ts';
import { type ChannelMessage, fromFiberMessage, toFiberMessage } from './wire.ts';

const b = (h: string) => hexToBytes(h);
const h = (x: Uint8Array) => bytesToHex(x);

/**
 * What a step back needs to undo our round (`ROUND_LOCAL`): a few numbers, not the channel. The
 * round's own changes to the TLCs are known from its updates — the TLCs it offered have ids from
 * `nextTlcId.offered` on, and `removed` lists the received ones it marked removed — so the TLCs
 * (and their keys, tens of KB at a hundred pending) are not copied into every state of the round.
 */
export function roundSnapshot(base: Channel, updates: ChannelMessage[]): RoundSnapshot {
  return {
    localBalance: base.localBalance,
    remoteBalance: base.remoteBalance,
    nextTlcId: base.nextTlcId,
    removed: updates.flatMap((u) => (u.type === 'RemoveTlc' ? [u.value.tlcId] : [])),
    // Strand mode: the head of the peer's pool, which our CommitmentSigned takes.
    ...(isFnn(base) || !base.nonces.theirs[0] ? {} : { theirNonce: base.nonces.theirs[0] }),
  };
}

export const enc = (m: ChannelMessage) => h(encodeFiberMessage(toFiberMessage(m)));
export function dec(x: string): ChannelMessage {
  const m = fromFiberMessage(decodeFiberMessage(b(x)));
  if (!m) throw new ChannelError('MissingState', 'cached message is not a channel message');
  return m;
}

/**
 * An update of our round as kept for a replay (`Channel.cache`): a reference to its TLC, which
 * holds every field of the message until the round ends — an AddTlc's onion (~13 KB of hex) and
 * a RemoveTlc's preimage or error are stored once, in the TLC, not again in every state written
 * during the round. (A cache of an earlier version holds whole messages; `dec` reads those.)
 */
export function cachedUpdate(m: ChannelMessage): string {
  if (m.type === 'AddTlc') return `${ADD_REF}${m.value.tlcId}`;
  if (m.type === 'RemoveTlc') return `${REMOVE_REF}${m.value.tlcId}`;
  return enc(m);
}

const ADD_REF = 'add:';
const REMOVE_REF = 'rm:';

/** The message a cached update stands for, byte for byte as it was sent (`cachedUpdate`). */
export function replayedUpdate(ch: Channel, x: string): ChannelMessage {
  if (x.startsWith(REMOVE_REF)) return removeMessageOf(ch, BigInt(x.slice(REMOVE_REF.length)));
  if (!x.startsWith(ADD_REF)) return dec(x);
  return addMessageOf(ch, BigInt(x.slice(ADD_REF.length)));
}

/** The AddTlc of a TLC we offered, from the TLC (which holds every field of it). */
export function addMessageOf(ch: Channel, id: bigint): ChannelMessage {
  const t = ch.tlcs.find((t) => t.offered && t.id === id);
  if (!t) throw new ChannelError('MissingState', `AddTlc ${id} to send again has no TLC`);
  return {
    type: 'AddTlc',
    value: {
      channelId: b(ch.id),
      tlcId: t.id,
      amount: t.amount,
      paymentHash: b(t.paymentHash),
      expiry: t.expiry,
      hashAlgorithm: t.hashAlgorithm,
      onionPacket: t.onion,
    },
  };
}

/** The RemoveTlc of a TLC the peer offered, from its removal. */
export function removeMessageOf(ch: Channel, id: bigint): ChannelMessage {
  const removal = ch.tlcs.find((t) => !t.offered && t.id === id)?.removal;
  if (!removal) throw new ChannelError('MissingState', `RemoveTlc ${id} to send again has no removed TLC`);
  const reason = removal.preimage ? { fulfill: b(removal.preimage) } : { fail: b(removal.error ?? '0x') };
  return { type: 'RemoveTlc', value: { channelId: b(ch.id), tlcId: id, reason } };
}

/**
 * The peer started a round while ours is unacknowledged: both sent updates at once. The side
 * with the smaller funding key wins and ignores the other's round; the loser steps back from its
 * round (`stepBack`; its updates are re-issued once the winner's round ends).
 */
export function collide(ch: Channel): { drop: true } | { drop: false; ch: Channel } {
  if (ch.round?.initiator !== 'local' || ch.round.gotRevoke) return { drop: false, ch };
  const weWin = Buffer.compare(b(ch.local.fundingPubkey), b((ch.remote as PartyParams).fundingPubkey)) < 0;
  if (weWin || !ch.round.before) return { drop: true };
  return { drop: false, ch: stepBack(ch, undoneRound(ch, ch.round.before)) };
}

type Undone = Pick<Channel, (typeof ROUND_LOCAL)[number]> & { theirNonce: Hex[] };

/** The `ROUND_LOCAL` fields as they were before our round, and the peer's nonce it took. */
function undoneRound(ch: Channel, before: RoundSnapshot | string): Undone {
  if (typeof before === 'string') {
    // A whole channel, as states stored by earlier versions keep it (no onions: every TLC in it
    // is still in the live channel).
    const was = withOnions(deserializeChannel(before), new Map(ch.tlcs.map((t) => [tlcKey(t), t.onion])));
    return { ...pickRoundLocal(was), theirNonce: isFnn(ch) ? [] : was.nonces.theirs.slice(0, 1) };
  }
  const removed = new Set(before.removed);
  const tlcs = ch.tlcs
    .filter((t) => !(t.offered && t.id >= before.nextTlcId.offered))
    .map((t) => (!t.offered && removed.has(t.id) ? { ...t, removal: undefined } : t));
  return {
    tlcs,
    localBalance: before.localBalance,
    remoteBalance: before.remoteBalance,
    nextTlcId: before.nextTlcId,
    theirNonce: before.theirNonce ? [before.theirNonce] : [],
  };
}

function pickRoundLocal(c: Channel): Pick<Channel, (typeof ROUND_LOCAL)[number]> {
  return {
    tlcs: c.tlcs,
    localBalance: c.localBalance,
    remoteBalance: c.remoteBalance,
    nextTlcId: c.nextTlcId,
  };
}

/**
 * The fields of a channel that our round's own updates and CommitmentSigned changed, and that a
 * step back therefore takes from the snapshot of the round's start (`round.before`). Nothing else
 * rolls back: a step back undoes our updates, not what happened meanwhile.
 *
 * - `tlcs`: our AddTlcs added TLCs, our RemoveTlcs marked received ones removed. The peer's
 *   updates cannot be among the changes: any update of the peer while our round is
 *   unacknowledged is the collision itself, applied only after the step back.
 * - `localBalance`, `remoteBalance`: moved by our updates when announced.
 * - `nextTlcId`: our AddTlcs took ids; re-issued from `retry` under the same ids.
 * (Also round-local, handled in `stepBack`: `round` (none of ours any more), `cache` (our round's
 * updates and CommitmentSigned must not be replayed after a reconnect; our last RevokeAndAck
 * stays), the head of the peer's nonce pool our CommitmentSigned took (Strand mode).)
 *
 * Kept as they are now (learned from the peer, or decided by us, outside our updates):
 * - `state`, `flags`, `shutdown`, `shutdownTxHash`, `closeTx`: a Shutdown sent or received during
 *   our round, the peer's ClosingSigned — the cooperative close goes on after the step back;
 * - `commitmentNumbers`, `revocation`, `latestCommitmentTx(Hash)`, `remote` (its commitment
 *   points): they move only with the peer's RevokeAndAck or CommitmentSigned, and a revocation is
 *   never undone (no step back once the peer revoked: `gotRevoke`);
 * - `nonces` (but for the one taken back), `fnn`, `announcement`: a secret nonce, once used,
 *   never comes back (its use counts hold whatever happened);
 * - `retry`: earlier stepped-back updates, to which ours are appended;
 * - `failureDetail`, `enabled` and the TLC relay parameters (set by the shell meanwhile), and
 *   everything fixed at opening.
 */
const ROUND_LOCAL = [
  'tlcs',
  'localBalance',
  'remoteBalance',
  'nextTlcId',
] as const satisfies readonly (keyof Channel)[];

/** The channel with our unacknowledged round undone (`ROUND_LOCAL`), our updates queued for retry. */
function stepBack(ch: Channel, undone: Undone): Channel {
  const { theirNonce, ...restored } = undone;
  // Retried updates are kept whole: the TLCs an AddTlc reference points to go with the step back.
  const updates = (ch.cache?.updates ?? []).map((x) => enc(replayedUpdate(ch, x)));
  return {
    ...ch,
    ...restored,
    round: null,
    cache: { updates: [], commit: null, revoke: ch.cache?.revoke ?? null },
    // Strand mode: the peer's nonce our CommitmentSigned took goes back in front of those it
    // advertised meanwhile. fnn mode: the ledger never steps back (`nonces` stays empty).
    nonces: { ...ch.nonces, theirs: [...theirNonce, ...ch.nonces.theirs] },
    retry: [...(ch.retry ?? []), ...updates],
  };
}
