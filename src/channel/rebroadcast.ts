/**
 * Which of our transactions a watcher may send again when the chain does not know it.
 *
 * A broadcast can be lost: the node killed between committing the state and sending, the chain
 * RPC down for every retry, a pool that dropped the tx. The state always holds what was sent
 * (the fully signed funding tx, our completed commitment, the cooperative close), so the
 * watcher waiting for its confirmation sends the same bytes again — never re-signs (a second
 * partial signature on one nonce is what `docs/nonces.md` forbids).
 */
import { ccc } from '@ckb-ccc/core';
import type { Channel } from './state.ts';

/** The tx with hash `hash` as this channel last broadcast it, or null if it has none to resend. */
export function resendable(ch: Channel, hash: string): ccc.Transaction | null {
  if (ch.state === 'AWAITING_CHANNEL_READY' && ch.fundingTxHash === hash && ch.fundingTx)
    return ccc.Transaction.fromBytes(ch.fundingTx);
  if (ch.shutdownTxHash !== hash || !ch.flags.includes('WAITING_COMMITMENT_CONFIRMATION')) return null;
  if (ch.shutdown?.force && ch.latestCommitmentTx) {
    const tx = ccc.Transaction.fromBytes(ch.latestCommitmentTx);
    return tx.hash() === hash ? tx : null;
  }
  return ch.closeTx ? ccc.Transaction.fromBytes(ch.closeTx) : null;
}
