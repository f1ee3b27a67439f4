import type { CellPresence } from '../bbs/index.js';
import { forEachLimited } from '../core/index.js';
import type { RepWork } from '../rep/index.js';
import type { CellState } from './auction.js';

interface Entry {
  /** The rep the state came from: a cell restarted under the same id is another rep. */
  readonly repUrl: string;
  readonly state: CellState;
  readonly readAtMs: number;
  /** Changes with every write of the entry, so a read begun before one can tell it is out of date. */
  readonly version: number;
}

/** A kept state, whether it is older than `maxAgeMs`, and the version a re-read of it starts from. */
export interface KeptCellState {
  readonly state: CellState;
  readonly stale: boolean;
  readonly version: number;
}

/**
 * The cell states the auctioneer read, kept for the batches of the next `maxAgeMs` with the work
 * each cell accepted added. Diego's auctioneer asks every cell for its state in every batch; in a
 * burst over 1,000 cells that is 1,000 requests per batch of at most 1,000 placements, the
 * server's largest cost. Only the auctioneer gives a cell work, and a rep counts what it
 * accepted at once (its reservation), so the cell's next answer is the kept state plus that work,
 * unless containers ended meanwhile and freed room, which the next read after `maxAgeMs` finds.
 * A kept state never shows room the cell does not have, only less.
 *
 * A state is dropped, and read before the cell gets work again, when its cell refused work or
 * could not be reached, when the cell's rep URL changed, after a batch that left work unplaced,
 * and after an event that may mean room (a task ended, an instance went): the auctioneer clears
 * the cache then. One older than `maxAgeMs` is stale: still used, since it can only show less room
 * than there is (an instance that crashed frees room with no event that says so), and read again
 * beside the auction, off its path (`remember` with the version the read began from, which a
 * write meanwhile makes it discard).
 */
export class CellStateCache {
  readonly #entries = new Map<string, Entry>();
  readonly #maxAgeMs: number;
  readonly #nowMs: () => number;
  #writes = 0;
  /** Cells whose stale state is being read again. */
  readonly #reading = new Set<string>();

  constructor(maxAgeMs: number, nowMs: () => number) {
    this.#maxAgeMs = maxAgeMs;
    this.#nowMs = nowMs;
  }

  /** The kept state of a live cell (from its current rep), stale or not. */
  kept(cell: CellPresence): KeptCellState | undefined {
    const entry = this.#entries.get(cell.cell_id);
    if (!entry || entry.repUrl !== cell.rep_url) return undefined;
    const ageMs = this.#nowMs() - entry.readAtMs;
    return { state: entry.state, stale: ageMs < 0 || ageMs >= this.#maxAgeMs, version: entry.version };
  }

  /**
   * A state just read from the cell's rep. With `basis` (the version of the entry when the read
   * began), it is kept only if the entry is still that one: work the cell accepted meanwhile may be
   * missing from what the rep answered, and a dropped entry was dropped for a reason.
   */
  remember(cell: CellPresence, state: CellState, basis?: number): boolean {
    if (basis !== undefined && this.#entries.get(cell.cell_id)?.version !== basis) return false;
    this.#entries.set(cell.cell_id, {
      repUrl: cell.rep_url,
      state,
      readAtMs: this.#nowMs(),
      version: ++this.#writes,
    });
    return true;
  }

  /**
   * Reads the stale states a batch used again, beside the next batches rather than before one:
   * after a quiet few minutes, the first batch (a lost cell's instances, say) would otherwise wait
   * for every live cell to answer (950 cells, 2.5 s). A read that work accepted meanwhile made out
   * of date is discarded (`remember` with the version it began from); a cell that does not answer
   * is dropped, to be read on the batch's path when it next gets work. Not awaited.
   */
  readAgain(
    stale: readonly { readonly cell: CellPresence; readonly version: number }[],
    read: (cell: CellPresence) => Promise<CellState>,
    concurrency: number,
  ): void {
    const due = stale.filter(({ cell }) => !this.#reading.has(cell.cell_id));
    for (const { cell } of due) this.#reading.add(cell.cell_id);
    void forEachLimited(due, concurrency, async ({ cell, version }) => {
      try {
        this.remember(cell, await read(cell), version);
      } catch {
        // catch-all: unanswered, the state is read on the batch's path next time it is needed.
        this.forget(cell.cell_id);
      } finally {
        this.#reading.delete(cell.cell_id);
      }
    });
  }

  /** Work the cell accepted, counted as its rep counts it: each piece one container. */
  accepted(cellId: string, work: RepWork): void {
    const entry = this.#entries.get(cellId);
    if (!entry) return;
    const { state } = entry;
    let memory = state.used.memory_mb;
    let disk = state.used.disk_mb;
    const lrps: Record<string, number> = { ...state.lrps };
    for (const piece of [...work.lrps, ...work.tasks]) {
      memory += piece.memory_mb;
      disk += piece.disk_mb;
    }
    for (const lrp of work.lrps) lrps[lrp.process_guid] = (lrps[lrp.process_guid] ?? 0) + 1;
    const containers = state.used.containers + work.lrps.length + work.tasks.length;
    this.#entries.set(cellId, {
      ...entry,
      state: { ...state, used: { memory_mb: memory, disk_mb: disk, containers }, lrps },
      version: ++this.#writes,
    });
  }

  /** The cell's state is read again next batch. */
  forget(cellId: string): void {
    this.#entries.delete(cellId);
  }

  /** Every state is read again next batch; cells no longer live are dropped. */
  clear(): void {
    this.#entries.clear();
  }

  /** Drops the cells that are not live any more. */
  keepOnly(live: ReadonlySet<string>): void {
    for (const id of this.#entries.keys()) if (!live.has(id)) this.#entries.delete(id);
  }
}
