/**
 * Group commit for channel states: the channel service stages each new state here and one
 * SQLite transaction (one fsync) later makes every state staged meanwhile durable at once.
 *
 * The rule stays "persist, then speak": a step's messages and other effects wait until the
 * transaction holding its state has committed (`ChannelService.commit`). What changes is that a
 * channel's next event is stepped on its newest state without waiting for the disk, and the
 * states of all channels staged in the same turn of the event loop share one commit — the cost
 * that bounded throughput when every state had its own.
 *
 * Reads see staged states: they are the machine's truth, only not durable yet. If the commit
 * fails, the staged states are dropped (reads fall back to what is on disk) and nothing that
 * depended on them has left the node.
 */

import type { Channel } from './state.ts';
import type { ChannelStore } from './store.ts';

export class StagedChannelStore {
  /** Newest staged state by temporary id, until the commit that holds it. */
  private readonly staged = new Map<string, Channel>();

  /** Told how long each successful group commit took, in ms (metrics). */
  onCommit?: (ms: number) => void;

  constructor(readonly durable: ChannelStore) {}

  get(id: string): Channel | undefined {
    const byTemp = this.staged.get(id);
    if (byTemp) return byTemp;
    for (const ch of this.staged.values()) if (ch.id === id) return ch;
    return this.durable.get(id);
  }

  list(): Channel[] {
    const all = this.durable.list();
    if (!this.staged.size) return all;
    const seen = new Set<string>();
    const merged = all.map((ch) => {
      seen.add(ch.tempId);
      return this.staged.get(ch.tempId) ?? ch;
    });
    const fresh = [...this.staged.values()].filter((ch) => !seen.has(ch.tempId));
    // The table's order: newest first, then by temporary id.
    return [...fresh, ...merged].sort(
      (a, b) => b.createdAt - a.createdAt || (a.tempId < b.tempId ? -1 : a.tempId > b.tempId ? 1 : 0),
    );
  }

  nextCount(): number {
    return this.durable.nextCount();
  }

  stage(ch: Channel): void {
    this.staged.set(ch.tempId, ch);
  }

  /**
   * Writes the newest staged state of every channel, and what `alsoWrite` writes, in one
   * transaction; the staged states are durable (and no longer staged) when it returns. On a
   * failure nothing is written and every staged state is dropped; the error is thrown.
   */
  commitStaged(alsoWrite: () => void): void {
    const states = [...this.staged.values()];
    this.staged.clear();
    const started = performance.now();
    this.durable.saveAll(states, alsoWrite);
    this.onCommit?.(performance.now() - started);
  }

  get pending(): boolean {
    return this.staged.size > 0;
  }
}
