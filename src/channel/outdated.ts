/**
 * Outdated channel state, pure: what the commitment numbers of a `ReestablishChannel` prove about
 * which side lost state (typically a node restored from an older backup), and how a channel whose
 * own state is outdated behaves from then on.
 *
 * Our numbers (L, R) — L: version of the peer's commitment we sign, R: version of ours — and the
 * peer's (pL, pR). Persist-before-send bounds what an honest exchange can leave behind after a
 * disconnect (one round in flight at a time):
 * - pL ≤ R: the peer learns of our revocation only from our RevokeAndAck, sent after we stored it;
 *   pL = R − 1 when it missed that message (we replay it);
 * - L ≤ pR ≤ L + 1: the peer revokes at most once ahead of us, and only in answer to a
 *   CommitmentSigned of ours that it has not yet been answered (our round is on record);
 * - right after ChannelReady one side may still count one below the other (both add one).
 * Outside those bounds:
 * - pL > R, pR > L + 1, or pR = L + 1 with no CommitmentSigned of ours awaiting a revocation:
 *   the peer holds a revocation of a commitment of ours we do not know — our state is outdated and
 *   our latest commitment is REVOKED. Publishing it would hand the peer's watchtower the whole
 *   channel. We mark the channel, never publish our commitment, refuse every update, and ask the
 *   peer to force-close: our share comes back when the peer's commitment settles on chain (our
 *   settlement key derives from the channel seed in our store, the peer's settlement witness
 *   reveals the script that pays us).
 * - pL + 1 < R or pR + 1 < L: the peer's state is outdated. Ours is the newest: the channel cannot
 *   go on, and our latest commitment is safe to publish — unless our own store was restored from a
 *   backup and not yet confirmed current, in which case a peer lying about its numbers could be
 *   trying to make us publish a revoked state: then we only log it.
 * A peer claiming we are behind cannot be checked (the message carries no proof); believing it
 * costs at most waiting for the peer's close, disbelieving it could cost the whole channel.
 */
import { hexToBytes } from '../codec/index.ts';
import { forceClose } from './close.ts';
import { ChannelError } from './errors.ts';
import { type Channel, coopCloseBroadcast, type Flag, hasFlag, withFlag } from './state.ts';
import type { Effect, Event, Step } from './step.ts';
import type { ChannelMessage, ReestablishChannel } from './wire.ts';

/** The TxAbort text a node with an outdated state sends to ask its peer to force-close. */
export const FORCE_CLOSE_REQUEST = 'outdated channel state, please force-close: ';

export type SyncVerdict =
  /** In sync, or a gap the normal replay closes. */
  { kind: 'resume' } | { kind: 'we-are-behind'; reason: string } | { kind: 'peer-is-behind'; reason: string };

/** Whether a CommitmentSigned of ours is out and not yet answered by the peer's RevokeAndAck. */
export function awaitingRevoke(ch: Channel): boolean {
  return (
    !!ch.round && ((ch.round.initiator === 'local' && !ch.round.gotRevoke) || ch.round.initiator === 'remote')
  );
}

export function syncVerdict(
  ch: Channel,
  m: Pick<ReestablishChannel, 'localCommitmentNumber' | 'remoteCommitmentNumber'>,
): SyncVerdict {
  const L = ch.commitmentNumbers.local;
  const R = ch.commitmentNumbers.remote;
  const pL = m.localCommitmentNumber;
  const pR = m.remoteCommitmentNumber;
  const numbers = `ours (${L}, ${R}), the peer's (${pL}, ${pR})`;
  if (pL > R || pR > L + 1n || (pR === L + 1n && !awaitingRevoke(ch)))
    return { kind: 'we-are-behind', reason: `our channel state is outdated: commitment numbers ${numbers}` };
  if (pL + 1n < R || pR + 1n < L)
    return {
      kind: 'peer-is-behind',
      reason: `the peer's channel state is outdated: commitment numbers ${numbers}`,
    };
  return { kind: 'resume' };
}

export function withoutFlag(ch: Channel, f: Flag): Channel {
  return hasFlag(ch, f) ? { ...ch, flags: ch.flags.filter((x) => x !== f) } : ch;
}

function forceCloseRequest(ch: Channel): ChannelMessage {
  return {
    type: 'TxAbort',
    value: {
      channelId: hexToBytes(ch.id),
      message: new TextEncoder().encode(FORCE_CLOSE_REQUEST + (ch.failureDetail ?? '')),
    },
  };
}

/** We are behind: mark the channel (for good), alarm the operator, ask the peer to close. */
export function markOutdated(ch0: Channel, reason: string): Step {
  const ch: Channel = {
    ...withoutFlag(withFlag(ch0, 'LOCAL_STATE_OUTDATED'), 'RESTORED_FROM_BACKUP'),
    round: null,
    retry: [],
    failureDetail: `${reason}; our latest commitment is revoked and will never be published — waiting for the peer to force-close`,
  };
  return {
    ch,
    effects: [
      { type: 'alarm', reason: ch.failureDetail as string },
      { type: 'send', msg: forceCloseRequest(ch) },
    ],
  };
}

/**
 * The peer is behind (or asks for a force close): close with our latest commitment, unless our
 * own store is unconfirmed, or our cooperative close is already broadcast — that one, signed by
 * both, ends the channel; a commitment of ours would only compete with it for the funding cell.
 */
export function onPeerBehind(ch: Channel, reason: string): Step {
  if (coopCloseBroadcast(ch))
    return {
      ch,
      effects: [
        {
          type: 'warn',
          reason: `${reason}; ignored: our cooperative close ${ch.shutdownTxHash} is broadcast and awaits confirmation`,
        },
      ],
    };
  if (hasFlag(ch, 'RESTORED_FROM_BACKUP'))
    return {
      ch: {
        ...ch,
        failureDetail: `${reason}; not force-closing: our state was restored from a backup and is not confirmed current`,
      },
      effects: [{ type: 'alarm', reason }],
    };
  const s = forceClose(ch);
  return {
    ch: { ...s.ch, failureDetail: `${reason}; force-closed with our latest commitment` },
    effects: [{ type: 'alarm', reason }, ...s.effects],
  };
}

/** A TxAbort on a ready channel: honoured when it is a peer's force-close request. */
export function onReadyAbort(ch: Channel, message: Uint8Array): Step {
  const text = new TextDecoder().decode(message);
  if (!text.startsWith(FORCE_CLOSE_REQUEST) || ch.shutdown?.force) return { ch, effects: [] };
  return onPeerBehind(ch, `the peer asked for a force close (${text.slice(FORCE_CLOSE_REQUEST.length)})`);
}

const OUTDATED_REFUSAL =
  'Invalid state: the channel state is outdated (restored from an older backup): our latest commitment is revoked and must never be published; the peer has been asked to force-close';
const RESTORED_REFUSAL =
  'Invalid state: the channel was restored from a backup and has not yet reestablished with the peer: its state may be outdated; connect to the peer first';

/** The commands that would sign on the channel's state: refused while it may be outdated. */
const SIGNING_COMMANDS: ReadonlySet<Event['type']> = new Set<Event['type']>([
  'shutdown',
  'addTlc',
  'removeTlc',
  'tlcBatch',
  'signCommitment',
]);

/**
 * What a channel marked outdated or restored does with an event before the machine sees it:
 * a step, or null to let the machine handle it. An outdated channel refuses every command,
 * answers a reconnection with its request again and ignores the peer's other messages; only
 * the chain (the peer's commitment, its settlement) moves it on. A restored channel does the same
 * until a reestablish confirms its state: signing anything on a possibly outdated state (a TLC
 * round, a close) could hand the peer a signature on balances that are no longer ours.
 */
export function guardOutdated(ch: Channel, ev: Event): Step | null {
  if (hasFlag(ch, 'LOCAL_STATE_OUTDATED')) {
    if (SIGNING_COMMANDS.has(ev.type)) throw new ChannelError('LocalStateOutdated', OUTDATED_REFUSAL);
    switch (ev.type) {
      case 'peer': {
        const effects: Effect[] =
          ev.msg.type === 'ReestablishChannel' ? [{ type: 'send', msg: forceCloseRequest(ch) }] : [];
        return { ch, effects };
      }
      case 'announcementDigest':
        return { ch, effects: [] };
      default:
        return null;
    }
  }
  if (hasFlag(ch, 'RESTORED_FROM_BACKUP')) {
    if (SIGNING_COMMANDS.has(ev.type)) throw new ChannelError('AwaitingReestablish', RESTORED_REFUSAL);
    switch (ev.type) {
      case 'peer':
        // The peer's ReestablishChannel comes first on every connection; until it is in, nothing else.
        return ev.msg.type === 'ReestablishChannel' || ev.msg.type === 'TxAbort' ? null : { ch, effects: [] };
      default:
        return null;
    }
  }
  return null;
}
