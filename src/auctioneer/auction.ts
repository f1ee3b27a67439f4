import type { CellCapacity, LRPStartRequest, TaskDefinition } from '../bbs/index.js';
import { CellHeap } from './cell-heap.js';

/** One LRP instance to place (a start request expands to one per index). */
export interface LRPAuctionWork {
  readonly kind: 'lrp';
  readonly process_guid: string;
  readonly domain: string;
  readonly index: number;
  readonly memory_mb: number;
  readonly disk_mb: number;
  readonly placement_tags: readonly string[];
  /** The cell its named volumes pin it to (its tags name that cell too); absent: unpinned. */
  readonly pinned_cell?: string;
}

export interface TaskAuctionWork {
  readonly kind: 'task';
  readonly task_guid: string;
  readonly domain: string;
  readonly memory_mb: number;
  readonly disk_mb: number;
  readonly placement_tags: readonly string[];
}

export type AuctionWork = LRPAuctionWork | TaskAuctionWork;

/** What a rep reports to the auctioneer about its cell. */
export interface CellState {
  readonly cell_id: string;
  readonly zone: string;
  readonly capacity: CellCapacity;
  /** Resources already taken (containers of every state, reservations included). */
  readonly used: CellCapacity;
  /** Instances per process_guid already on the cell, to avoid colocating one DesiredLRP. */
  readonly lrps: Readonly<Record<string, number>>;
  readonly evacuating: boolean;
  /** Tags the cell requires: it takes only work that carries every one of them. */
  readonly placement_tags: readonly string[];
  /** Tags the cell also accepts, e.g. `cell:<id>` for sidecars pinned to it. */
  readonly optional_placement_tags: readonly string[];
}

/**
 * Diego's matching rule: work fits a cell when its tags include every tag the cell requires and
 * every one of its tags is one the cell requires or offers. So untagged work never lands on a
 * `gpu` cell, and a sidecar tagged `cell:c1` lands only on the cell offering `cell:c1`.
 */
export function cellMatchesTags(
  cell: Pick<CellState, 'placement_tags' | 'optional_placement_tags'>,
  tags: readonly string[],
): boolean {
  const wanted = new Set(tags);
  for (const t of cell.placement_tags) if (!wanted.has(t)) return false;
  for (const t of wanted)
    if (!cell.placement_tags.includes(t) && !cell.optional_placement_tags.includes(t)) return false;
  return true;
}

export interface AuctionConfig {
  /** The availability zones, in a fixed order; NZones = zones.length. */
  readonly zones: readonly string[];
  /**
   * Score added per instance of the same DesiredLRP already on a cell, in units of a cell's whole
   * load (1 = a full cell). The default 1 colocates only when every other choice is fuller.
   */
  readonly colocationWeight?: number;
}

export interface Placement {
  readonly cell_id: string;
  readonly work: AuctionWork;
}

export interface PlacementFailure {
  readonly work: AuctionWork;
  readonly reason: string;
  /**
   * The work would fit a cell it may go to if that cell were empty: it waits for room (a container
   * that ends, a cell that appears), as an unschedulable pod waits in Kubernetes' scheduler, rather
   * than failing its batch. False when no cell it may go to could ever hold it (tags, zone, size).
   */
  readonly waitsForRoom: boolean;
}

export interface AuctionResult {
  readonly placements: readonly Placement[];
  readonly failures: readonly PlacementFailure[];
}

export interface AuctionBatch {
  readonly lrps: readonly LRPAuctionWork[];
  readonly tasks: readonly TaskAuctionWork[];
}

export function lrpWorkFromStartRequest(req: LRPStartRequest): LRPAuctionWork[] {
  return req.indices.map((index) => ({
    kind: 'lrp',
    process_guid: req.process_guid,
    domain: req.domain,
    index,
    memory_mb: req.memory_mb,
    disk_mb: req.disk_mb,
    placement_tags: req.placement_tags,
    ...(req.pinned_cell !== undefined ? { pinned_cell: req.pinned_cell } : {}),
  }));
}

export function taskWork(task: TaskDefinition): TaskAuctionWork {
  return {
    kind: 'task',
    task_guid: task.task_guid,
    domain: task.domain,
    memory_mb: task.memory_mb,
    disk_mb: task.disk_mb,
    placement_tags: task.placement_tags,
  };
}

/** The seed's deterministic f(ProcessGuid): 32-bit FNV-1a, stable across processes and releases. */
export function guidHash(guid: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < guid.length; i++) {
    h ^= guid.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** PreferredZone(ProcessGuid, Index) = (f(ProcessGuid) + Index) % NZones, as an index into zones. */
export function preferredZoneIndex(processGuid: string, index: number, nZones: number): number {
  return ((guidHash(processGuid) % nZones) + index) % nZones;
}

/**
 * Index ≤ 1 (and tasks, which have no index) may leave their zone; index > 1 must not. Work pinned
 * to a cell by its volumes goes to that cell's zone, whichever it is.
 */
function mayLeaveZone(work: AuctionWork): boolean {
  return work.kind === 'task' || work.index <= 1 || work.pinned_cell !== undefined;
}

/**
 * Why work pinned to a cell by its named volumes was not placed (Diego-like: it waits for its
 * cell; only an operator's release of the pin lets it start elsewhere, with fresh volumes).
 */
export function pinnedCellReason(
  cellId: string,
  cells: readonly Pick<CellState, 'cell_id' | 'evacuating'>[],
  /** The live cell is there but its placement tags do not match the work's (else: no room). */
  tagsMismatch = false,
): string {
  const cell = cells.find((c) => c.cell_id === cellId);
  const state =
    cell === undefined
      ? 'which is gone'
      : cell.evacuating
        ? 'which is evacuating'
        : tagsMismatch
          ? 'whose placement tags it does not match'
          : 'which has no room for it';
  return `pinned to cell ${cellId} by its named volumes, ${state}: it waits for that cell (or for an operator to release the pin: berth volume unpin)`;
}

function tagKey(tags: readonly string[]): string {
  return [...new Set(tags)].sort().join('\u0000');
}

function workGuid(work: AuctionWork): string {
  return work.kind === 'lrp' ? work.process_guid : work.task_guid;
}

function fraction(used: number, cap: number): number {
  return cap > 0 ? used / cap : 1;
}

/**
 * Places a batch of work on cells, in memory; the caller submits the placements to the reps and
 * retries the failures later (the auctioneer never writes the BBS).
 *
 * Rules: never an evacuating cell; never beyond a cell's memory, disk or container capacity; a
 * cell takes only work whose tags match it (`cellMatchesTags`). Among the fitting cells of a zone the
 * lowest score wins: the cell's load (mean of its memory and disk fractions) plus
 * `colocationWeight` per instance of the same DesiredLRP already there; ties go to the lower
 * cell_id, so the result is a function of the inputs.
 *
 * Zones: every piece of work first tries its PreferredZone only; once all work has had that
 * chance, index ≤ 1 instances and tasks that did not fit fall back to the other zones (fewest
 * instances of their DesiredLRP first). So a fallback never takes room that work of that zone
 * needed. Work is placed largest first (memory, then disk), which keeps per-cell use even.
 */
export function auction(
  batch: AuctionBatch,
  cells: readonly CellState[],
  config: AuctionConfig,
): AuctionResult {
  const colocationWeight = config.colocationWeight ?? 1;
  const live = cells.filter((c) => !c.evacuating);
  const n = live.length;

  // Zones: the configured ones first (their order defines PreferredZone), then any zone a cell
  // reports that the configuration does not know, usable only as a fallback.
  const zoneNames: string[] = [...config.zones];
  for (const z of [...new Set(live.map((c) => c.zone))].sort()) if (!zoneNames.includes(z)) zoneNames.push(z);
  const nPreferred = config.zones.length > 0 ? config.zones.length : zoneNames.length;
  const zoneOf = new Map(zoneNames.map((z, i) => [z, i]));

  const memUsed = new Float64Array(n);
  const diskUsed = new Float64Array(n);
  const containersUsed = new Float64Array(n);
  const load = new Float64Array(n);
  const rank = new Int32Array(n);
  const colocated: Map<string, number>[] = [];
  const order = live
    .map((_, i) => i)
    .sort((a, b) => ((live[a] as CellState).cell_id < (live[b] as CellState).cell_id ? -1 : 1));
  order.forEach((slot, r) => {
    rank[slot] = r;
  });

  // Instances of each DesiredLRP per zone, for the zone half of the colocation rule.
  const perZone = new Map<string, Int32Array>();
  function zoneCounts(guid: string): Int32Array {
    let counts = perZone.get(guid);
    if (counts === undefined) {
      counts = new Int32Array(zoneNames.length);
      perZone.set(guid, counts);
    }
    return counts;
  }

  for (let i = 0; i < n; i++) {
    const c = live[i] as CellState;
    memUsed[i] = c.used.memory_mb;
    diskUsed[i] = c.used.disk_mb;
    containersUsed[i] = c.used.containers;
    load[i] =
      (fraction(c.used.memory_mb, c.capacity.memory_mb) + fraction(c.used.disk_mb, c.capacity.disk_mb)) / 2;
    const z = zoneOf.get(c.zone) as number;
    const counts = new Map<string, number>();
    for (const [guid, count] of Object.entries(c.lrps)) {
      if (count <= 0) continue;
      counts.set(guid, count);
      const zc = zoneCounts(guid);
      zc[z] = (zc[z] as number) + count;
    }
    colocated.push(counts);
  }

  // One heap per (tag set of the work, zone), built the first time work with that tag set comes
  // up. A cell may match several tag sets, so it remembers every heap it is in.
  const heapsOfSlot: CellHeap[][] = live.map(() => []);
  const heapsByTags = new Map<string, (CellHeap | undefined)[]>();
  function zoneHeaps(w: AuctionWork): (CellHeap | undefined)[] {
    const tk = tagKey(w.placement_tags);
    let heaps = heapsByTags.get(tk);
    if (heaps === undefined) {
      heaps = new Array<CellHeap | undefined>(zoneNames.length).fill(undefined);
      for (let i = 0; i < n; i++) {
        const c = live[i] as CellState;
        if (!cellMatchesTags(c, w.placement_tags)) continue;
        const z = zoneOf.get(c.zone) as number;
        let heap = heaps[z];
        if (heap === undefined) {
          heap = new CellHeap(load, rank);
          heaps[z] = heap;
        }
        heap.push(i);
        (heapsOfSlot[i] as CellHeap[]).push(heap);
      }
      heapsByTags.set(tk, heaps);
    }
    return heaps;
  }

  function fits(slot: number, w: AuctionWork): boolean {
    const cap = (live[slot] as CellState).capacity;
    return (
      (memUsed[slot] as number) + w.memory_mb <= cap.memory_mb &&
      (diskUsed[slot] as number) + w.disk_mb <= cap.disk_mb &&
      (containersUsed[slot] as number) + 1 <= cap.containers
    );
  }

  /**
   * Whether some live cell w may use (its tags; `zone`, or any zone when undefined; its pinned
   * cell, if pinned) could hold it when empty. Memoized by what decides it: a batch has few shapes.
   */
  const couldEverFit = new Map<string, boolean>();
  function fitsSomeEmptyCell(w: AuctionWork, zone: number | undefined): boolean {
    const pin = pinnedCell(w);
    const key = [tagKey(w.placement_tags), zone ?? '', pin ?? '', w.memory_mb, w.disk_mb].join('\u0001');
    let answer = couldEverFit.get(key);
    if (answer === undefined) {
      answer = live.some(
        (c) =>
          (zone === undefined || zoneOf.get(c.zone) === zone) &&
          (pin === undefined || c.cell_id === pin) &&
          cellMatchesTags(c, w.placement_tags) &&
          w.memory_mb <= c.capacity.memory_mb &&
          w.disk_mb <= c.capacity.disk_mb &&
          c.capacity.containers >= 1,
      );
      couldEverFit.set(key, answer);
    }
    return answer;
  }

  /**
   * The best fitting cell of a heap for w, or -1. Cells come off the heap in (load, rank) order;
   * since a score is never below its load, the search stops at the first cell whose load cannot
   * beat the best score so far. Typically one or two pops.
   */
  function best(heap: CellHeap, w: AuctionWork, guid: string): { slot: number; score: number } {
    const popped: number[] = [];
    let bestSlot = -1;
    let bestScore = Number.POSITIVE_INFINITY;
    for (let top = heap.peek(); top !== undefined; top = heap.peek()) {
      const l = load[top] as number;
      if (
        l > bestScore ||
        (l === bestScore && bestSlot >= 0 && (rank[top] as number) > (rank[bestSlot] as number))
      )
        break;
      heap.pop();
      popped.push(top);
      if (!fits(top, w)) continue;
      const score =
        l +
        (w.kind === 'lrp' ? colocationWeight * ((colocated[top] as Map<string, number>).get(guid) ?? 0) : 0);
      if (score < bestScore || (score === bestScore && (rank[top] as number) < (rank[bestSlot] as number))) {
        bestScore = score;
        bestSlot = top;
      }
    }
    for (const slot of popped) heap.push(slot);
    return { slot: bestSlot, score: bestScore };
  }

  function heapsOf(slot: number): CellHeap[] {
    return heapsOfSlot[slot] as CellHeap[];
  }

  function place(slot: number, zone: number, w: AuctionWork, guid: string): void {
    const c = live[slot] as CellState;
    memUsed[slot] = (memUsed[slot] as number) + w.memory_mb;
    diskUsed[slot] = (diskUsed[slot] as number) + w.disk_mb;
    containersUsed[slot] = (containersUsed[slot] as number) + 1;
    load[slot] =
      (fraction(memUsed[slot] as number, c.capacity.memory_mb) +
        fraction(diskUsed[slot] as number, c.capacity.disk_mb)) /
      2;
    // The cell's key changed: re-sort it in every heap it is in.
    for (const heap of heapsOf(slot)) heap.update(slot);
    if (w.kind === 'lrp') {
      const m = colocated[slot] as Map<string, number>;
      m.set(guid, (m.get(guid) ?? 0) + 1);
      const counts = zoneCounts(guid);
      counts[zone] = (counts[zone] as number) + 1;
    }
    placements.push({ cell_id: c.cell_id, work: w });
  }

  const all: AuctionWork[] = [...batch.lrps, ...batch.tasks];
  const sorted = all
    .map((w, i) => ({ w, i }))
    .sort((a, b) => {
      const x = a.w;
      const y = b.w;
      if (x.memory_mb !== y.memory_mb) return y.memory_mb - x.memory_mb;
      if (x.disk_mb !== y.disk_mb) return y.disk_mb - x.disk_mb;
      const xi = x.kind === 'lrp' ? x.index : 0;
      const yi = y.kind === 'lrp' ? y.index : 0;
      if (xi !== yi) return xi - yi;
      const xg = workGuid(x);
      const yg = workGuid(y);
      if (xg !== yg) return xg < yg ? -1 : 1;
      return a.i - b.i;
    })
    .map((e) => e.w);

  const placements: Placement[] = [];
  const failures: PlacementFailure[] = [];
  const fallback: { w: AuctionWork; preferred: number }[] = [];

  // Pass 1: all work at home, in one largest-first order. (Placing index > 1 first would protect
  // its room further, but a second largest-first sweep over a balanced zone undoes the balance.)
  for (const w of sorted) {
    const guid = workGuid(w);
    const heaps = zoneHeaps(w);
    if (heaps.every((h) => h === undefined)) {
      failures.push({ work: w, reason: noMatchingCellReason(w, n, cells), waitsForRoom: false });
      continue;
    }
    const preferred =
      nPreferred === 0 ? -1 : preferredZoneIndex(guid, w.kind === 'lrp' ? w.index : 0, nPreferred);
    const heap = preferred < 0 ? undefined : heaps[preferred];
    if (heap !== undefined) {
      const b = best(heap, w, guid);
      if (b.slot >= 0) {
        place(b.slot, preferred, w, guid);
        continue;
      }
    }
    if (mayLeaveZone(w)) fallback.push({ w, preferred });
    else
      failures.push({
        work: w,
        reason: `no room in zone ${zoneNames[preferred] ?? '(none)'}`,
        waitsForRoom: fitsSomeEmptyCell(w, preferred),
      });
  }

  // Pass 2: index ≤ 1 and tasks that did not fit at home try the other zones.
  for (const { w, preferred } of fallback) {
    const guid = workGuid(w);
    const heaps = zoneHeaps(w);
    const counts = w.kind === 'lrp' ? zoneCounts(guid) : undefined;
    let chosen: { slot: number; zone: number; spread: number; score: number } | undefined;
    for (let z = 0; z < zoneNames.length; z++) {
      if (z === preferred) continue;
      const heap = heaps[z];
      if (heap === undefined) continue;
      const b = best(heap, w, guid);
      if (b.slot < 0) continue;
      const spread = counts === undefined ? 0 : (counts[z] as number);
      if (
        chosen === undefined ||
        spread < chosen.spread ||
        (spread === chosen.spread && b.score < chosen.score)
      ) {
        chosen = { slot: b.slot, zone: z, spread, score: b.score };
      }
    }
    if (chosen !== undefined) {
      place(chosen.slot, chosen.zone, w, guid);
      continue;
    }
    const pin = pinnedCell(w);
    const waitsForRoom = fitsSomeEmptyCell(w, undefined);
    const reason =
      pin !== undefined
        ? pinnedCellReason(pin, cells)
        : waitsForRoom
          ? 'insufficient resources: no cell in any zone has room'
          : `insufficient resources: no cell it may use could hold it (${w.memory_mb} MB memory, ${w.disk_mb} MB disk)`;
    failures.push({ work: w, reason, waitsForRoom });
  }

  return { placements, failures };
}

function pinnedCell(w: AuctionWork): string | undefined {
  return w.kind === 'lrp' ? w.pinned_cell : undefined;
}

function noMatchingCellReason(w: AuctionWork, liveCells: number, cells: readonly CellState[]): string {
  const pin = pinnedCell(w);
  if (pin !== undefined) return pinnedCellReason(pin, cells, true);
  if (liveCells === 0) return 'no cells available';
  return `found no compatible cell for placement tags [${[...w.placement_tags].sort().join(', ')}]`;
}
