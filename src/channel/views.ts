/**
 * The channel as the last finished TLC round left it. In the middle of a round the latest
 * commitment on either side may still be that one (its updates announced, not yet signed into
 * it), so whoever rebuilds a commitment's settlement script after a force close — the watchtower —
 * tries both the channel as it stands and this view.
 *
 * A pipelined channel (`pipelined.ts`) names its commitments exactly instead: ours is its latest,
 * the peer's its latest or, while our CommitmentSigned waits for the RevokeAndAck, the one before.
 */
import { viewChannel } from './pipelined.ts';
import type { Channel, Tlc } from './state.ts';

export function committedView(ch: Channel): Channel {
  let local = ch.localBalance;
  let remote = ch.remoteBalance;
  const tlcs: Tlc[] = [];
  for (const t of ch.tlcs) {
    if (t.added === 'announced') {
      // Not in the older commitments: its amount is back with the side that offered it.
      if (t.offered) local += t.amount;
      else remote += t.amount;
      continue;
    }
    if (t.removal?.state === 'announced') {
      // Still pending there: the amount its removal moved goes back into the TLC.
      const toOfferer = !t.removal.preimage;
      const toLocal = t.offered === toOfferer;
      if (toLocal) local -= t.amount;
      else remote -= t.amount;
      const { removal: _r, ...pending } = t;
      tlcs.push(pending);
      continue;
    }
    tlcs.push(t);
  }
  return { ...ch, tlcs, localBalance: local, remoteBalance: remote };
}

/**
 * The commitments of the channel that may be on chain, latest first: held by the peer (`peers`)
 * or by us, as channels `buildCommitment` reads. Round model: the channel as it stands and as the
 * last round left it.
 */
export function commitmentCandidates(ch: Channel, peers: boolean): Channel[] {
  const log = ch.pipelined?.log;
  if (!log) return [ch, committedView(ch)];
  if (!peers) return [viewChannel(ch, 'local', log.local)];
  const latest = viewChannel(ch, 'remote', log.remote);
  return log.awaitingRevoke ? [latest, viewChannel(ch, 'remote', log.remote - 1n)] : [latest];
}

/** The latest commitment held by the peer (`peers`) or by us: the channel itself in rounds. */
export function latestCommitmentView(ch: Channel, peers: boolean): Channel {
  return ch.pipelined ? (commitmentCandidates(ch, peers)[0] as Channel) : ch;
}
