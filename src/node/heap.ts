/**
 * How much the JavaScript heap may grow between full garbage collections (`heap_growth_percent`).
 *
 * After a full (mark-compact) collection V8 sets the next one's trigger at what survived times a
 * factor it picks from how fast the program allocates and how fast it marks. A node keeps ~50 MB
 * alive (its code, the sources of its modules, its caches) and, under load, promotes a stream of
 * objects that live one payment round — a pending TLC's state, its onion — into the old
 * generation. With V8's own factor (~1.5 measured here) that started a full collection every
 * 0.3–2 s on each node, each costing 20–60 ms of the node's thread (incremental marking steps and
 * the final pause) plus the marking threads' CPU on a 2-core machine, on the path of every
 * payment in flight. A fixed factor of 3 (200 %) made them ten times rarer on a loaded payee
 * (docs/performance.md, "Full collections"). The price is memory: up to ~3× the live heap
 * (~150 MB for a devnet node) before a collection, instead of ~1.5× (the peak resident size of a
 * devnet node measured the same either way); V8 still caps it at its heap limit.
 *
 * V8 reads the flag each time it computes the next trigger, so it is set once at start-up by the
 * `strand node` command (`cli/node.ts`), before the node allocates its state. 0 leaves V8's own
 * heuristic in place.
 */
import v8 from 'node:v8';

export const DEFAULT_HEAP_GROWTH_PERCENT = 200;
/** A factor of 11: past it a node's memory would grow with no gain measured. */
export const MAX_HEAP_GROWTH_PERCENT = 1000;

/** Sets V8's heap growing factor for this process (1 + percent/100); 0 leaves V8's own. */
export function applyHeapGrowth(
  percent: number,
  setFlags: (flags: string) => void = v8.setFlagsFromString,
): void {
  if (percent > 0) setFlags(`--heap-growing-percent=${percent}`);
}
