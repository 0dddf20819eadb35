/**
 * Pipelined channels (`pipelined.ts`): the CommitmentSigned that only the peer's fulfils wait for.
 * The machine sends it at once when it covers anything else (`pipelined-step.ts`); one that would
 * cover only fulfils the peer sent us waits a little, so that our next updates (the next payments,
 * which a payer's client sends on learning of the preimage) ride with it instead of waiting two
 * legs behind it. Nothing is at risk meanwhile: the preimage is ours already, and the peer holds
 * the TLC in its commitment, claimable with that preimage. After `delayMs` it goes alone.
 */
import { canSign } from './pipelined.ts';
import type { Channel } from './state.ts';

/**
 * The wait: about what a client takes to answer a payment's success with the next one on a
 * loopback connection (~1.5 ms traced, `performance.md`), with room to spare.
 */
export const PIPELINED_SIGN_DELAY_MS = 3;

export class DeferredSign {
  private readonly timers = new Map<string, NodeJS.Timeout>();

  constructor(
    private readonly delayMs: number,
    /** Signs now if the rules allow (the machine's `signCommitment`, in the channel's actor). */
    private readonly sign: (tempId: string) => void,
  ) {}

  /** After every committed state of a channel. */
  observe(ch: Channel): void {
    if (!ch.pipelined || !canSign(ch) || ch.state === 'CLOSED') {
      this.clear(ch.tempId);
      return;
    }
    if (this.timers.has(ch.tempId)) return;
    const timer = setTimeout(() => {
      this.timers.delete(ch.tempId);
      this.sign(ch.tempId);
    }, this.delayMs);
    timer.unref?.();
    this.timers.set(ch.tempId, timer);
  }

  stop(): void {
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
  }

  private clear(tempId: string): void {
    const t = this.timers.get(tempId);
    if (t) clearTimeout(t);
    this.timers.delete(tempId);
  }
}
