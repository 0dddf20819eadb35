/**
 * Peer response timeout: a TLC round the peer leaves unanswered for `timeoutMs` (30 s, the
 * reference's PEER_CHANNEL_RESPONSE_TIMEOUT) drops the peer's session. The redial and the
 * ReestablishChannel that follow replay what the peer missed, so a lost message or a stuck peer
 * costs one reconnection, not the channel. (v0.8 force-closes at this point instead; Strand leaves
 * that to the TLC expiry check, which closes only when money would otherwise be at risk.)
 */
import type { Channel } from './state.ts';

export interface AckTimeoutHooks {
  isConnected(pubkey: string): boolean;
  /** Closes the session; the node reconnects as it does after any drop. */
  drop(pubkey: string, reason: string): void;
  log?: { warn(obj: object, msg?: string): void };
}

/** What "still waiting" means: a round in progress, at this point of it. */
function waitingKey(ch: Channel): string | null {
  // Pipelined: our CommitmentSigned waiting for its RevokeAndAck (`pipelined.ts`).
  const log = ch.pipelined?.log;
  if (log) return log.awaitingRevoke ? `p:${log.remote}` : null;
  const r = ch.round;
  if (!r) return null;
  const n = ch.commitmentNumbers;
  return `${n.local}:${n.remote}:${r.initiator}:${!!r.gotRevoke}:${!!r.gotCommit}`;
}

export class AckTimeout {
  private readonly clocks = new Map<string, { key: string; peer: string; timer: NodeJS.Timeout }>();

  constructor(
    private readonly timeoutMs: number,
    private readonly hooks: AckTimeoutHooks,
  ) {}

  /** After every committed change of a channel: progress restarts the clock, the round's end stops it. */
  observe(ch: Channel): void {
    const key = waitingKey(ch);
    const cur = this.clocks.get(ch.tempId);
    if (cur && cur.key === key) return;
    if (cur) clearTimeout(cur.timer);
    this.clocks.delete(ch.tempId);
    if (key) this.arm(ch.tempId, key, ch.peer);
  }

  /** The peer (re)connected: its unfinished rounds get a whole timeout to resume. */
  reconnected(pubkey: string): void {
    for (const [id, c] of this.clocks) {
      if (c.peer !== pubkey) continue;
      clearTimeout(c.timer);
      this.arm(id, c.key, c.peer);
    }
  }

  stop(): void {
    for (const c of this.clocks.values()) clearTimeout(c.timer);
    this.clocks.clear();
  }

  private arm(id: string, key: string, peer: string): void {
    const timer = setTimeout(() => {
      if (!this.hooks.isConnected(peer)) {
        // Offline: nothing to drop; the reconnection restarts the clock.
        this.arm(id, key, peer);
        return;
      }
      this.hooks.log?.warn(
        { channel: id, peer },
        'peer response timeout: dropping the session to reestablish',
      );
      this.hooks.drop(peer, 'peer response timeout');
      this.arm(id, key, peer);
    }, this.timeoutMs);
    timer.unref?.();
    this.clocks.set(id, { key, peer, timer });
  }
}
