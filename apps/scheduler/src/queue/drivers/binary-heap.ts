/**
 * A binary min-heap ordered by `before`: push and pop are O(log n), peek O(1). The memory queue
 * driver keeps one per priority plus one of leases; it never removes from the middle (entries
 * that changed are left behind as stale nodes and skipped when they reach the top).
 */
export class BinaryHeap<T> {
  private items: T[] = [];

  /** `before(a, b)` is true when `a` must come out before `b`. */
  constructor(private readonly before: (a: T, b: T) => boolean) {}

  get size(): number {
    return this.items.length;
  }

  peek(): T | undefined {
    return this.items[0];
  }

  push(item: T): void {
    this.items.push(item);
    this.up(this.items.length - 1);
  }

  pop(): T | undefined {
    const items = this.items;
    if (items.length === 0) return undefined;
    const top = items[0];
    const last = items.pop() as T;
    if (items.length > 0) {
      items[0] = last;
      this.down(0);
    }
    return top;
  }

  /** Keeps only the items `keep` accepts, re-heapified in O(n): the stale-node compaction. */
  retain(keep: (item: T) => boolean): void {
    this.items = this.items.filter(keep);
    for (let i = (this.items.length >> 1) - 1; i >= 0; i--) this.down(i);
  }

  clear(): void {
    this.items = [];
  }

  private up(index: number): void {
    const items = this.items;
    const item = items[index];
    while (index > 0) {
      const parent = (index - 1) >> 1;
      if (!this.before(item, items[parent])) break;
      items[index] = items[parent];
      index = parent;
    }
    items[index] = item;
  }

  private down(index: number): void {
    const items = this.items;
    const length = items.length;
    const item = items[index];
    for (;;) {
      const left = 2 * index + 1;
      if (left >= length) break;
      const right = left + 1;
      const child = right < length && this.before(items[right], items[left]) ? right : left;
      if (!this.before(items[child], item)) break;
      items[index] = items[child];
      index = child;
    }
    items[index] = item;
  }
}
