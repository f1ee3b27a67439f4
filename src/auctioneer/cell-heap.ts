/**
 * A binary min-heap of cell slots ordered by (load, rank). The auction keeps one per (zone, tag set
 * of the work) so finding the least-loaded fitting cell is O(log cells) instead of a scan of every
 * cell per instance. A cell can sit in several heaps (work with different tags may match it), so
 * the heap tracks each slot's position and re-sorts a slot in place when its load changes.
 */
export class CellHeap {
  readonly #items: number[] = [];
  /** Position of each slot in `items`, -1 when absent. */
  readonly #pos: Int32Array;

  readonly #load: Float64Array;
  readonly #rank: Int32Array;

  constructor(load: Float64Array, rank: Int32Array) {
    this.#load = load;
    this.#rank = rank;
    this.#pos = new Int32Array(load.length).fill(-1);
  }

  get size(): number {
    return this.#items.length;
  }

  peek(): number | undefined {
    return this.#items[0];
  }

  has(slot: number): boolean {
    return (this.#pos[slot] as number) >= 0;
  }

  push(slot: number): void {
    this.#items.push(slot);
    this.#siftUp(this.#items.length - 1, slot);
  }

  pop(): number | undefined {
    const items = this.#items;
    const top = items[0];
    const last = items.pop();
    if (top === undefined || last === undefined) return undefined;
    this.#pos[top] = -1;
    if (items.length > 0) this.#siftDown(0, last);
    return top;
  }

  /** Restores the order after the slot's load changed (in either direction). */
  update(slot: number): void {
    const i = this.#pos[slot] as number;
    if (i < 0) return;
    this.#siftUp(i, slot);
    this.#siftDown(this.#pos[slot] as number, slot);
  }

  /** (load, rank) order; rank (the cell_id order) makes ties deterministic. */
  less(a: number, b: number): boolean {
    const la = this.#load[a] as number;
    const lb = this.#load[b] as number;
    return la < lb || (la === lb && (this.#rank[a] as number) < (this.#rank[b] as number));
  }

  #put(i: number, slot: number): void {
    this.#items[i] = slot;
    this.#pos[slot] = i;
  }

  #siftUp(start: number, slot: number): void {
    let i = start;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = this.#items[parent] as number;
      if (!this.less(slot, p)) break;
      this.#put(i, p);
      i = parent;
    }
    this.#put(i, slot);
  }

  #siftDown(start: number, slot: number): void {
    const items = this.#items;
    const n = items.length;
    let i = start;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const lv = items[l] as number;
      const child = r < n && this.less(items[r] as number, lv) ? r : l;
      const cv = items[child] as number;
      if (!this.less(cv, slot)) break;
      this.#put(i, cv);
      i = child;
    }
    this.#put(i, slot);
  }
}
