/**
 * Messages that may wait for our next message to the same peer (`mayWait` on a send effect).
 *
 * The one user: the fresh nonce (TxComplete) advertised on completing the peer's RevokeAndAck:
 * in the round model the responder's, after the last message of a round; in a pipelined channel
 * (`pipelined.ts`) either side's. Sent alone it wakes the peer only to store a nonce it cannot
 * need before our next message: the nonce of ours it still holds signs the CommitmentSigned that
 * may start its next round, and everything else it signs answers a message of ours
 * (`docs/nonces.md`). On a forwarder it also went out just before the forward's AddTlc to the next
 * hop. Held, it leaves in the same write as our next message to that peer, ahead of it, or after
 * `maxHoldMs`.
 *
 * Order is kept: a held message always leaves before any later one to that peer. A new session
 * with the peer drops what was held for the old one: the ReestablishChannel that follows
 * advertises every nonce of our pool again (`reestablish.ts`), as it would after a message lost
 * with a broken connection.
 */
import type { FiberMessage } from '../p2p/index.ts';

export const HELD_SEND_MAX_MS = 100;

export interface HeldSendsLink {
  send(pubkey: string, message: FiberMessage): void;
  isConnected(pubkey: string): boolean;
}

/** A held message that could not be sent when its time came (the timer's own call has no caller). */
export type HeldSendFailure = (pubkey: string, message: FiberMessage, err: Error) => void;

export class HeldSends {
  private readonly held = new Map<string, { messages: FiberMessage[]; timer: NodeJS.Timeout }>();

  constructor(
    private readonly link: HeldSendsLink,
    private readonly onFailure: HeldSendFailure,
    private readonly maxHoldMs = HELD_SEND_MAX_MS,
  ) {}

  /** Keeps `message` until the next `send` to `pubkey`, or `maxHoldMs`. */
  hold(pubkey: string, message: FiberMessage): void {
    const cur = this.held.get(pubkey);
    if (cur) {
      cur.messages.push(message);
      return;
    }
    const timer = setTimeout(() => this.release(pubkey), this.maxHoldMs);
    timer.unref();
    this.held.set(pubkey, { messages: [message], timer });
  }

  /** Sends `message`, after what was held for the same peer. */
  send(pubkey: string, message: FiberMessage): void {
    this.release(pubkey);
    this.link.send(pubkey, message);
  }

  /** A new session with the peer: what was held belongs to the old one. */
  drop(pubkey: string): void {
    const cur = this.held.get(pubkey);
    if (!cur) return;
    clearTimeout(cur.timer);
    this.held.delete(pubkey);
  }

  /** Sends what is held for `pubkey` now (nothing when the peer is gone: see `drop`). */
  release(pubkey: string): void {
    const cur = this.held.get(pubkey);
    if (!cur) return;
    clearTimeout(cur.timer);
    this.held.delete(pubkey);
    if (!this.link.isConnected(pubkey)) return;
    for (const m of cur.messages) {
      try {
        this.link.send(pubkey, m);
      } catch (err) {
        this.onFailure(pubkey, m, err as Error);
      }
    }
  }

  /** Stops the timers (the service stops); nothing more is sent. */
  clear(): void {
    for (const cur of this.held.values()) clearTimeout(cur.timer);
    this.held.clear();
  }

  get size(): number {
    return this.held.size;
  }
}
