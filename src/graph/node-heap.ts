/**
 * The path finder's priority queue: a binary heap keyed by node, smaller distance first, then
 * larger probability.
 */

/** What the heap orders an entry by. */
export interface HeapEntry {
  node: string;
  distance: bigint;
  probability: number;
}

/** Binary heap with one entry per node (push_or_fix replaces a node's entry). */
export class NodeHeap<T extends HeapEntry> {
  private readonly items: T[] = [];
  private readonly pos = new Map<string, number>();

  get size(): number {
    return this.items.length;
  }

  /** a before b: smaller distance, then larger probability. */
  private before(a: T, b: T): boolean {
    if (a.distance !== b.distance) return a.distance < b.distance;
    return a.probability > b.probability;
  }

  pushOrFix(n: T): void {
    const at = this.pos.get(n.node);
    if (at === undefined) {
      this.items.push(n);
      this.pos.set(n.node, this.items.length - 1);
      this.up(this.items.length - 1);
      return;
    }
    this.items[at] = n;
    this.up(at);
    this.down(this.pos.get(n.node)!);
  }

  pop(): T | undefined {
    const top = this.items[0];
    if (!top) return undefined;
    const last = this.items.pop()!;
    this.pos.delete(top.node);
    if (this.items.length > 0) {
      this.items[0] = last;
      this.pos.set(last.node, 0);
      this.down(0);
    }
    return top;
  }

  private swap(i: number, j: number): void {
    const a = this.items[i]!;
    const b = this.items[j]!;
    this.items[i] = b;
    this.items[j] = a;
    this.pos.set(b.node, i);
    this.pos.set(a.node, j);
  }

  private up(i: number): void {
    let k = i;
    while (k > 0) {
      const p = (k - 1) >> 1;
      if (!this.before(this.items[k]!, this.items[p]!)) break;
      this.swap(k, p);
      k = p;
    }
  }

  private down(i: number): void {
    let k = i;
    for (;;) {
      const l = 2 * k + 1;
      const r = l + 1;
      let best = k;
      if (l < this.items.length && this.before(this.items[l]!, this.items[best]!)) best = l;
      if (r < this.items.length && this.before(this.items[r]!, this.items[best]!)) best = r;
      if (best === k) return;
      this.swap(k, best);
      k = best;
    }
  }
}
