/**
 * Garbage collections of this process's main thread, counted by kind, with their pauses: read by
 * the metrics (`strand_gc_collections_total`, `strand_gc_pause_seconds_total`) and so by
 * `bench:payments`, which prints the full collections a node made per thousand payments.
 *
 * One observer for the process (a collection is the isolate's, not a node's), started by the
 * first reader. Its entries arrive after the collection, in a later turn; the pause is the time
 * the thread was stopped, not the concurrent marking done beside it.
 */
import { constants, PerformanceObserver } from 'node:perf_hooks';

export type GcKind = 'minor' | 'major' | 'incremental' | 'weakcb';

const KINDS: Record<number, GcKind> = {
  [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
  [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
};

export interface GcTotals {
  count: number;
  pauseMs: number;
}

const totals = new Map<GcKind, GcTotals>();
let observer: PerformanceObserver | undefined;

/** Collections so far by kind (zeros for kinds not seen), since the first call. */
export function gcTotals(): Map<GcKind, GcTotals> {
  if (!observer) {
    for (const kind of Object.values(KINDS)) totals.set(kind, { count: 0, pauseMs: 0 });
    observer = new PerformanceObserver((list) => {
      for (const e of list.getEntries()) {
        const detail = (e as { detail?: { kind?: number } }).detail;
        const kind = KINDS[detail?.kind ?? -1];
        const t = kind && totals.get(kind);
        if (!t) continue;
        t.count++;
        t.pauseMs += e.duration;
      }
    });
    // The observer keeps nothing alive: a process with nothing else to do still exits.
    observer.observe({ entryTypes: ['gc'] });
  }
  return totals;
}
