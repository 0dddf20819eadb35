/**
 * The channel as the last finished TLC round left it. In the middle of a round the latest
 * commitment on either side may still be that one (its updates announced, not yet signed into
 * it), so whoever rebuilds a commitment's settlement script after a force close — the watchtower —
 * tries both the channel as it stands and this view.
 */
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
