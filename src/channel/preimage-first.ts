/**
 * Preimages out before signing. The peer sends its RemoveTlcs (preimages of TLCs we offered) and
 * then its CommitmentSigned, in one write. Taking the CommitmentSigned costs ~1 ms of signing,
 * and its answer is not what anyone waits for most: the payer waits for its preimage, and a
 * forwarder's upstream claim is what carries it there. That claim (or the payment's success) is
 * made in the effects of the RemoveTlcs' commit, at the end of the turn. So a CommitmentSigned
 * that follows such RemoveTlcs waits for that turn's group commit and the flush that sends its
 * output out. Traced over two hops: the forwarder wrote its upstream RemoveTlc ~2 ms after the
 * preimage came, behind the signing; ~1 ms with this. The peer loses nothing: our answer to its
 * CommitmentSigned comes one flush later, and it waits for that answer anyway.
 */
import type { Step } from './step.ts';

export class PreimageFirst {
  /** Channels (temporary ids) whose peer gave preimages since their last CommitmentSigned. */
  private readonly taken = new Set<string>();

  constructor(
    /** Resolves once every commit made so far is durable and its output released. */
    private readonly durable: () => Promise<void>,
  ) {}

  /** A step of the channel: notes whether the peer gave a preimage of a TLC we offered. */
  stepped(tempId: string, s: Step): void {
    for (const e of s.effects)
      if (e.type === 'tlc' && e.notice.type === 'preimage' && e.notice.tlc.offered) {
        this.taken.add(tempId);
        return;
      }
  }

  /**
   * Before the channel takes the peer's message of type `type`: for a CommitmentSigned after
   * preimages, the end of this turn (the group commit and its effects) and the flush after it.
   * Undefined when nothing is to wait for: every other message goes on in the same tick.
   */
  before(tempId: string, type: string): Promise<void> | undefined {
    if (type !== 'CommitmentSigned' || !this.taken.delete(tempId)) return undefined;
    return new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.durable());
  }
}
