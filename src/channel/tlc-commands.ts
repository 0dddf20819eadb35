/**
 * The channel service's TLC commands (`addTlc`, `removeTlc`): run at once on an idle channel, or
 * queued (`tlc-queue.ts`) and sent together as the updates of the next round once the current
 * one ends. Their owners learn the outcome once the state holding it is durable.
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

export class TlcCommands {
  /** TLC commands waiting for a channel's round to end (the next round's batch), by temporary id. */
  private readonly tlcQueue = new TlcQueue();
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
   * A TLC command, inside the channel's actor: run at once on an idle channel, else queued for
   * the batch of the next round (`drainTlcs`, from `commit` when the round ends). With
   * `waitMs: 0` a busy channel refuses it at once (the machine's WAITING_ACK).
   */
  tlcCommand(tempId: string, cmd: TlcCommand, waitMs = 10_000): Promise<bigint | undefined> {
    return new Promise((resolve, reject) => {
      const w: WaitingTlc = { cmd, resolve, reject };
      this.enqueue(tempId, () => {
        const ch = this.store.get(tempId);
        if (!ch) throw new ChannelError('ChannelClosed', 'Messaging failed because channel is closed');
        if (!roundBusy(ch) || waitMs <= 0) return this.runTlcBatch(ch, [w]);
        if (cmd.type === 'addTlc' && this.tlcQueue.addsWaiting(tempId) >= maxQueuedAdds(ch))
          throw new ChannelError('TlcLimitExceeded', ADD_TLC_ERRORS.limit);
        this.tlcQueue.add(tempId, w, waitMs);
      }).catch(reject);
    });
  }

  /** The round ended: everything queued meanwhile goes out as the updates of one new round. */
  drainTlcs(ch: Channel): void {
    if (ch.state === 'CLOSED') {
      for (const w of this.tlcQueue.take(ch.tempId))
        w.reject(new ChannelError('ChannelClosed', 'Messaging failed because channel is closed'));
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
    this.commit(s, () =>
      settleOutcomes(
        ws,
        s.outcomes,
        () => new ChannelError('ChannelClosed', 'Messaging failed because channel is closed'),
      ),
    ).catch((e) => {
      for (const w of ws) w.reject(e as Error);
    });
  }
}
