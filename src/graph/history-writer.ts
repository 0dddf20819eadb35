/**
 * The payment history's records written to the store at most once a second, each with its
 * latest value. A payer records a result per channel of the route on every payment: at hundreds
 * of payments a second over the same channels that was one or two row writes per payment, for a
 * value that only the next write would read. The history steers the path finder's choices and is
 * not money: a crash loses at most the last second of it, and the next payments relearn it. A
 * graceful stop writes what is pending (`flush`).
 */
import type { Direction, TimedResult } from './history.ts';

/** How long a changed record may wait for its write, ms. */
export const HISTORY_WRITE_MS = 1_000;

export type SaveHistory = (outpoint: string, direction: Direction, result: TimedResult | null) => void;

export class HistoryWriter {
  /** Changed records, by outpoint and direction: their latest value (null: deleted). */
  private readonly pending = new Map<string, [string, Direction, TimedResult | null]>();
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly save: SaveHistory,
    /** A write failed (a full disk, a closed store): the record is left to the next payments. */
    private readonly onError: (err: Error) => void,
    private readonly delayMs = HISTORY_WRITE_MS,
  ) {}

  /** A record changed: written with the next batch, in its latest value. */
  changed(outpoint: string, direction: Direction, result: TimedResult | null): void {
    this.pending.set(`${outpoint}/${direction}`, [outpoint, direction, result]);
    if (this.timer) return;
    this.timer = setTimeout(() => this.flush(), this.delayMs);
    this.timer.unref?.();
  }

  /** Writes every pending record now. */
  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = [...this.pending.values()];
    this.pending.clear();
    for (const [outpoint, direction, result] of batch) {
      try {
        this.save(outpoint, direction, result);
      } catch (e) {
        this.onError(e as Error);
      }
    }
  }
}
