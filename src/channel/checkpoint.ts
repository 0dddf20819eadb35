/**
 * The channel part of a backup: run on the backup's copy of the store (never on the live one),
 * it marks every ready channel `RESTORED_FROM_BACKUP` and lists the commitment numbers and
 * balances the copy holds, for `backup.json`.
 *
 * The mark makes a node started from the backup careful until each channel's first reestablish
 * proves the copy current: it refuses to force-close (our latest commitment in the copy may have
 * been revoked since), and does not take a peer's low numbers as a reason to publish it. A
 * reestablish in sync clears the mark; numbers proving the copy outdated turn it into
 * `LOCAL_STATE_OUTDATED` (`outdated.ts`).
 */
import type { Db } from '../store/index.ts';
import { spendAllNonces } from './fnn-nonces.ts';
import { withFlag } from './state.ts';
import { ChannelStore } from './store.ts';

export interface ChannelCheckpoint {
  channel_id: string;
  peer_pubkey: string;
  state: string;
  /** Version of the peer's commitment we sign (L) and of ours (R), decimal. */
  local_commitment_number: string;
  remote_commitment_number: string;
  local_balance: string;
  remote_balance: string;
  pending_tlcs: number;
}

export function checkpointBackupStore(copy: Db): ChannelCheckpoint[] {
  const store = new ChannelStore(copy);
  const out: ChannelCheckpoint[] = [];
  copy.transaction(() => {
    for (const ch of store.list()) {
      if (ch.state === 'CLOSED') continue;
      // fnn mode: a nonce may have signed after the copy was made; its count here would be low.
      const c = spendAllNonces(ch);
      if (ch.state === 'CHANNEL_READY') store.save(withFlag(c, 'RESTORED_FROM_BACKUP'));
      else if (c !== ch) store.save(c);
      out.push({
        channel_id: ch.id,
        peer_pubkey: ch.peer,
        state: ch.state,
        local_commitment_number: String(ch.commitmentNumbers.local),
        remote_commitment_number: String(ch.commitmentNumbers.remote),
        local_balance: String(ch.localBalance),
        remote_balance: String(ch.remoteBalance),
        pending_tlcs: ch.tlcs.length,
      });
    }
  })();
  return out;
}
