/**
 * The channel service's TLC commands (`addTlc`, `removeTlc`): queued (`tlc-queue.ts`) and sent
 * together as the updates of the next round, which starts at the end of the turn on an idle
 * channel and once the current round ends on a busy one. Their owners learn the outcome once the
 * state holding it is durable.
 */
import { ChannelError } from './errors.ts';
import { step } from './machine.ts';
import type { StagedChannelStore } from './staged-store.ts';
import type { Channel, PartyParams } from './state.ts';
import type { MachineEnv, Step } from './step.ts';
import { ADD_TLC_ERRORS, roundBusy, type TlcCommand, WAITING_ACK } from './tlc.ts';
import { settleOutcomes, TlcQueue, type WaitingTlc } from './tlc-queue.ts';

export interface TlcCommandsOptions {
  store: StagedChannelStore;
  env: MachineEnv;
  /** Runs `fn` in the channel's queue (`ChannelService.enqueue`). */
  enqueue(key: string, fn: () => void | Promise<void>): Promise<void>;
  /** Persist, then act (`ChannelService.commit`). */
  commit(s: Step, then?: () => void): Promise<void>;
}

/**
 * The AddTlc commands a channel queues behind its round: no more than the peer takes in flight.
 * A batch can never offer more (`tlcBatch` refuses the rest with TemporaryChannelFailure), so one
 * past this is refused now, the same way, instead of waiting to be: a flood of payments costs a
 * bounded queue per channel, not memory without end. Removals are never refused here: they free
 * the channel, and there are never more than the TLCs it holds.
 */
function maxQueuedAdds(ch: Channel): number {
  return Number((ch.remote as PartyParams | undefined)?.maxTlcNumberInFlight ?? 0n);
}

/** The reference's refusal of a TLC command on a channel that is closed (or gone). */
const channelClosed = () => new ChannelError('ChannelClosed', 'Messaging failed because channel is closed');

export class TlcCommands {
  /** TLC commands waiting for a channel's round to end (the next round's batch), by temporary id. */
  private readonly tlcQueue = new TlcQueue();
  /** Channels whose idle-round start is scheduled for the end of this turn (`drainAtEndOfTurn`). */
  private readonly drainScheduled = new Set<string>();
  private readonly store: StagedChannelStore;
  private readonly env: MachineEnv;

  constructor(private readonly c: TlcCommandsOptions) {
    this.store = c.store;
    this.env = c.env;
  }

  private enqueue(key: string, fn: () => void | Promise<void>): Promise<void> {
    return this.c.enqueue(key, fn);
  }

  private commit(s: Step, then?: () => void): Promise<void> {
    return this.c.commit(s, then);
  }

  /** The service stops: every waiting command fails with the reference's "waiting TLC ACK". */
  stop(): void {
    this.tlcQueue.rejectAll(() => new ChannelError('WaitingTlcAck', WAITING_ACK));
  }

  /**
   * A TLC command, inside the channel's actor: queued for the batch of the next round, which on
   * an idle channel starts at the end of this turn (`drainAtEndOfTurn`) and on a busy one when its
   * round ends (`drainTlcs`, from `commit`). With `waitMs: 0` it runs at once, and a busy channel
   * refuses it (the machine's WAITING_ACK).
   */
  tlcCommand(tempId: string, cmd: TlcCommand, waitMs = 10_000): Promise<bigint | undefined> {
    return new Promise((resolve, reject) => {
      const w: WaitingTlc = { cmd, resolve, reject };
      this.enqueue(tempId, () => {
        const ch = this.store.get(tempId);
        if (!ch) throw channelClosed();
        if (waitMs <= 0) return this.runTlcBatch(ch, [w]);
        if (cmd.type === 'addTlc' && this.tlcQueue.addsWaiting(tempId) >= maxQueuedAdds(ch))
          throw new ChannelError('TlcLimitExceeded', ADD_TLC_ERRORS.limit);
        this.tlcQueue.add(tempId, w, waitMs);
        if (!roundBusy(ch)) this.drainAtEndOfTurn(tempId);
      }).catch(reject);
    });
  }

  /**
   * An idle channel's round starts at the end of this turn of the event loop, not at the first
   * command: the commands the same input gives rise to (a payee settling every TLC a round
   * committed, an application's burst of payments) then share one round. Started at the first,
   * the round carried one update and the rest waited a whole round behind it (traced at 64 in
   * flight: a removal round of 1, then one of 63). One at a time it costs one event-loop turn.
   */
  private drainAtEndOfTurn(tempId: string): void {
    if (this.drainScheduled.has(tempId)) return;
    this.drainScheduled.add(tempId);
    setImmediate(() => {
      this.drainScheduled.delete(tempId);
      this.enqueue(tempId, () => {
        const ch = this.store.get(tempId);
        if (ch) this.drainTlcs(ch);
        else for (const w of this.tlcQueue.take(tempId)) w.reject(channelClosed());
      }).catch((e) => {
        for (const w of this.tlcQueue.take(tempId)) w.reject(e as Error);
      });
    });
  }

  /**
   * Runs now the batches scheduled for the end of the turn (`drainAtEndOfTurn`) of the channels
   * whose actor is `idle` (nothing of theirs running or waiting, so running outside it is the
   * same as in it); the others run when their turn comes, as scheduled. For the flush about to
   * start: a batch run after it would need the next one (one at a time over two hops, ~2 ms more
   * a payment: two flushes one after the other at the forwarder and the payee).
   */
  runScheduled(idle: (tempId: string) => boolean): void {
    for (const tempId of this.drainScheduled) {
      if (!idle(tempId)) continue;
      const ch = this.store.get(tempId);
      if (ch) this.drainTlcs(ch);
    }
  }

  /** The round ended: everything queued meanwhile goes out as the updates of one new round. */
  drainTlcs(ch: Channel): void {
    if (ch.state === 'CLOSED') {
      for (const w of this.tlcQueue.take(ch.tempId)) w.reject(channelClosed());
      return;
    }
    if (roundBusy(ch)) return;
    const ws = this.tlcQueue.take(ch.tempId);
    if (ws.length) this.runTlcBatch(ch, ws);
  }

  private runTlcBatch(ch: Channel, ws: WaitingTlc[]): void {
    let s: Step;
    try {
      s = step(ch, { type: 'tlcBatch', cmds: ws.map((w) => w.cmd) }, this.env);
    } catch (e) {
      for (const w of ws) w.reject(e as Error);
      return;
    }
    // The owners learn their TLC ids once the state holding them is durable.
    this.commit(s, () => settleOutcomes(ws, s.outcomes, channelClosed)).catch((e) => {
      for (const w of ws) w.reject(e as Error);
    });
  }
}
