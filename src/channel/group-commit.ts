/**
 * The channel service's group commit: persist, then act. Every step's new state is staged, and
 * the states staged in one turn of the event loop are committed in one transaction with the TLC
 * outcomes of their steps (a channel written once, however many steps it took); then each step's
 * effects run, in order.
 */
import { StorageError } from '../codec/index.ts';
import type { ChannelLogger } from './chain-watch.ts';
import type { StagedChannelStore } from './staged-store.ts';
import type { Channel } from './state.ts';
import type { Step } from './step.ts';
import type { TlcNotice } from './tlc.ts';

/** A step whose state is staged for the next group commit, and what waits for that commit. */
interface StagedStep {
  s: Step;
  then?: () => void;
  resolve: () => void;
  reject: (e: Error) => void;
}

export interface GroupCommitOptions {
  store: StagedChannelStore;
  log: ChannelLogger;
  /** The `onTlcRecord` recorders: they run inside the commit's transaction. */
  tlcRecorders: ReadonlySet<(channelId: string, notice: TlcNotice) => void>;
  /** A step committed: its effects and what follows them (`ChannelService.afterCommit`). */
  afterCommit(s: Step): void;
  /** The commit failed on storage: the channel's peer is stalled (`ChannelService.stallOnStorage`). */
  stallOnStorage(ch: Channel, failure: StorageError): void;
  /** The output gate's flush, asked for to run right after the group commit (`Durability.requestFlush`). */
  requestFlush?: () => void;
}

export class GroupCommit {
  /** Steps staged since the last group commit, in order: their effects wait for it. */
  private readonly batch: StagedStep[] = [];
  private flushing = false;
  private readonly store: StagedChannelStore;
  private readonly log: ChannelLogger;
  private readonly tlcRecorders: GroupCommitOptions['tlcRecorders'];

  constructor(private readonly c: GroupCommitOptions) {
    this.store = c.store;
    this.log = c.log;
    this.tlcRecorders = c.tlcRecorders;
  }

  /**
   * Persist, then act: nothing leaves the node before the state it depends on is committed. The
   * state is staged now (reads see it at once) and committed with every state staged in the same
   * turn of the event loop, in one transaction (`staged-store.ts`); then, in order, each step's
   * effects and `then`. Resolves after that; rejects if the commit failed (nothing was sent).
   */
  commit(s: Step, then?: () => void): Promise<void> {
    this.store.stage(s.ch);
    const done = new Promise<void>((resolve, reject) => this.batch.push({ s, then, resolve, reject }));
    done.catch(() => undefined); // a caller that does not wait has nothing to do on failure
    if (!this.flushing) {
      this.flushing = true;
      // At the end of this turn of the event loop, so that every step of the turn shares it: the
      // peer's updates of one round arrive together and each is a job of the channel's queue, so
      // a flush after the first job's microtasks wrote the channel once per message. Nothing
      // waits longer for it: output leaves only after the WAL flush at the end of the turn, and
      // that flush commits these states first (`ChannelService.commitStaged`, its `beforeFlush`).
      setImmediate(() => this.flush());
      // The messages it offers then leave with a flush in the same turn, not after the next poll
      // of the event loop (behind the RPC calls and peer messages that poll brings).
      this.c.requestFlush?.();
    }
    return done;
  }

  /**
   * The group commit: every staged state and the TLC outcomes of its steps, then their effects.
   * Whether there was anything to commit.
   */
  flush(): boolean {
    this.flushing = false;
    const batch = this.batch.splice(0);
    if (!batch.length) return false;
    try {
      this.store.commitStaged(() => {
        if (!this.tlcRecorders.size) return;
        for (const { s } of batch)
          for (const e of s.effects)
            if (e.type === 'tlc') for (const r of this.tlcRecorders) r(s.ch.id, e.notice);
      });
    } catch (e) {
      const failure = StorageError.from(e);
      const peers = new Map(batch.map((b) => [b.s.ch.peer, b.s.ch]));
      for (const ch of peers.values()) {
        if (failure) this.stallOnStorage(ch, failure);
        else this.log.error({ channel: ch.id, err: (e as Error).message }, 'channel states not committed');
      }
      for (const b of batch) b.reject(e as Error);
      return true;
    }
    for (const b of batch) {
      try {
        this.afterCommit(b.s);
        b.then?.();
        b.resolve();
      } catch (e) {
        this.log.error({ channel: b.s.ch.id, err: (e as Error).message }, 'channel effects failed');
        b.reject(e as Error);
      }
    }
    return true;
  }

  private afterCommit(s: Step): void {
    this.c.afterCommit(s);
  }

  private stallOnStorage(ch: Channel, failure: StorageError): void {
    this.c.stallOnStorage(ch, failure);
  }
}
