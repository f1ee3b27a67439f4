/**
 * A binary min-heap of cell slots ordered by (load, rank). The auction keeps one per (zone, tag set)
 * so finding the least-loaded cell is O(log cells) instead of a scan of every cell per instance.
 */
export class CellHeap {
  private readonly items: number[] = [];

  constructor(
    private readonly load: Float64Array,
    private readonly rank: Int32Array,
  ) {}

  get size(): number {
    return this.items.length;
  }

  peek(): number | undefined {
    return this.items[0];
  }

  push(slot: number): void {
    const items = this.items;
    items.push(slot);
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = items[parent] as number;
      if (!this.less(slot, p)) break;
      items[i] = p;
      i = parent;
    }
    items[i] = slot;
  }

  pop(): number | undefined {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (top === undefined || last === undefined || items.length === 0) return top;
    let i = 0;
    const n = items.length;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const lv = items[l] as number;
      const child = r < n && this.less(items[r] as number, lv) ? r : l;
      const cv = items[child] as number;
      if (!this.less(cv, last)) break;
      items[i] = cv;
      i = child;
    }
    items[i] = last;
    return top;
  }

  /** (load, rank) order; rank (the cell_id order) makes ties deterministic. */
  less(a: number, b: number): boolean {
    const la = this.load[a] as number;
    const lb = this.load[b] as number;
    return la < lb || (la === lb && (this.rank[a] as number) < (this.rank[b] as number));
  }
}
