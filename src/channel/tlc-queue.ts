/**
 * TLC commands waiting for their channel's round to end, per channel and in arrival order. The
 * channel service takes them all when the round ends and sends them as the updates of the next
 * round (`tlcBatch` in `tlc.ts`): n payments in flight cost one round per batch, not one each.
 * Nothing here is persisted: a waiting command has not been promised to anyone yet (its caller
 * learns its TLC id only once the update is committed and on its way).
 */
import { ChannelError } from './errors.ts';
import { type TlcCommand, type TlcOutcome, WAITING_ACK } from './tlc.ts';

export interface WaitingTlc {
  cmd: TlcCommand;
  /** With the TLC id for an AddTlc. */
  resolve(tlcId: bigint | undefined): void;
  reject(err: Error): void;
  timer?: NodeJS.Timeout;
}

export class TlcQueue {
  private readonly waiting = new Map<string, WaitingTlc[]>();

  /**
   * Queues `w` behind the channel's round; if the round has not ended within `waitMs`, `w`
   * leaves the queue and fails with the reference's "waiting TLC ACK" text, as a busy channel
   * answered before batching. With an infinite `waitMs` it waits for the round however long
   * (a peer reconnecting), until the channel closes or the node stops.
   */
  add(key: string, w: WaitingTlc, waitMs: number): void {
    const list = this.waiting.get(key) ?? [];
    this.waiting.set(key, list);
    list.push(w);
    if (!Number.isFinite(waitMs)) return;
    w.timer = setTimeout(() => {
      const at = list.indexOf(w);
      if (at < 0) return;
      list.splice(at, 1);
      if (list.length === 0 && this.waiting.get(key) === list) this.waiting.delete(key);
      w.reject(new ChannelError('WaitingTlcAck', WAITING_ACK));
    }, waitMs);
    w.timer.unref?.();
  }

  /** How many AddTlc commands wait for the channel. */
  addsWaiting(key: string): number {
    let n = 0;
    for (const w of this.waiting.get(key) ?? []) if (w.cmd.type === 'addTlc') n++;
    return n;
  }

  /** Everything waiting for the channel, oldest first; their timers stop. */
  take(key: string): WaitingTlc[] {
    const list = this.waiting.get(key) ?? [];
    this.waiting.delete(key);
    for (const w of list) clearTimeout(w.timer);
    return list;
  }

  /** The node stops: nobody waits any longer. */
  rejectAll(err: () => Error): void {
    for (const key of [...this.waiting.keys()]) for (const w of this.take(key)) w.reject(err());
  }
}

/** Settles each waiting command with its outcome (a missing one: the batch was not run). */
export function settleOutcomes(
  ws: WaitingTlc[],
  outcomes: TlcOutcome[] | undefined,
  missing: () => Error,
): void {
  ws.forEach((w, i) => {
    const o = outcomes?.[i];
    if (!o) w.reject(missing());
    else if (o.ok) w.resolve(o.tlcId);
    else w.reject(o.error);
  });
}
