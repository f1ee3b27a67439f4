import type { AuctionWork } from './auction.js';
import { samePlacement, workKey } from './auction-work-keys.js';

/** Outbox rows that are acknowledged once every piece of work they cover is settled. */
export interface Delivery {
  readonly kind: 'lrp' | 'task';
  readonly ids: readonly number[];
  readonly pending: Set<string>;
}

export interface PoolEntry {
  readonly key: string;
  /** The newest request's: a released volume pin changes an instance's tags between requests. */
  work: AuctionWork;
  readonly deliveries: Delivery[];
  /** Batches this work has been through without being placed, for reasons other than room. */
  attempts: number;
  /** When (ms) it first waited for room, if it has: such waits are bounded by time, not batches. */
  waitingSince: number | undefined;
  /** The placement error last written on its ActualLRP, so an unchanged one is not rewritten. */
  recordedError: string | undefined;
}

/**
 * The auctioneer's memory between batches: each piece of work not yet placed, keyed by instance
 * or task, and the outbox deliveries it came in, which may be acknowledged only once every piece
 * they cover is settled (placed, obsolete, or an LRP whose placement error is recorded). Pure
 * bookkeeping; the auctioneer service does the reads, the calls to reps and the acks.
 */
export class AuctionPool {
  readonly #entries = new Map<string, PoolEntry>();
  /** Deliveries not yet acknowledged. */
  readonly #open = new Set<Delivery>();
  /** Failed batches after which a piece of work is given up. */
  readonly #retryBatches: number;

  constructor(retryBatches: number) {
    this.#retryBatches = retryBatches;
  }

  get size(): number {
    return this.#entries.size;
  }

  entries(): PoolEntry[] {
    return [...this.#entries.values()];
  }

  get(key: string): PoolEntry | undefined {
    return this.#entries.get(key);
  }

  /** Pools the work (once per key), remembering the delivery it came in, if any. */
  add(work: AuctionWork, delivery: Delivery | undefined): void {
    const key = workKey(work);
    let entry = this.#entries.get(key);
    if (entry === undefined) {
      entry = { key, work, deliveries: [], attempts: 0, waitingSince: undefined, recordedError: undefined };
      this.#entries.set(key, entry);
    } else if (delivery !== undefined && !samePlacement(entry.work, work)) {
      // Placed by what it asks for now (its pin released, say); the error recorded was the old one's.
      entry.work = work;
      entry.recordedError = undefined;
    } else if (delivery !== undefined && entry.recordedError !== undefined && delivery.kind === 'lrp') {
      // A fresh start request (the converger re-emitted it) for work whose error is already
      // recorded: nothing new to record, so it is settled for the outbox at once.
      delivery.pending.delete(key);
    }
    if (delivery !== undefined) {
      entry.deliveries.push(delivery);
      this.#open.add(delivery);
      // The outbox delivered it again (its visibility timeout ran out while it waited here), so
      // its request still stands (a cancel deletes it) and its row is hidden for another timeout.
      // Its wait for room starts over: given up now, it would sit out that whole timeout with
      // nothing placing it (a 1,000-task burst stalled for 25 s at the 30th second).
      entry.waitingSince = undefined;
    }
  }

  /** Counts a failed batch; true when the work is given up (after `retryBatches`). */
  retryOrDrop(entry: PoolEntry): boolean {
    entry.attempts++;
    if (entry.attempts < this.#retryBatches) return false;
    this.#drop(entry);
    return true;
  }

  /**
   * Work that fits a cell it may use, only not now: it stays for the next batches whatever their
   * number (a burst of tasks beyond the cells' room would otherwise use up its batches in seconds
   * and wait out the outbox's visibility timeout), and is given up once it has waited `maxWaitMs`
   * since its first wait, so work that became obsolete meanwhile (a deleted LRP, a cancelled task)
   * leaves within that. True when given up.
   */
  waitForRoom(entry: PoolEntry, nowMs: number, maxWaitMs: number): boolean {
    entry.waitingSince ??= nowMs;
    if (nowMs - entry.waitingSince < maxWaitMs) return false;
    this.#drop(entry);
    return true;
  }

  #drop(entry: PoolEntry): void {
    this.#entries.delete(entry.key);
    // An LRP's outbox row was acked when its error was recorded; a task's row stays and comes back
    // after the visibility timeout, so dropping it here loses nothing.
    for (const d of entry.deliveries) {
      if (d.kind === 'lrp') d.pending.delete(entry.key);
      else this.#open.delete(d);
    }
  }

  /** The work is placed (or obsolete): out of the pool, and its outbox rows may be acked. */
  settle(entry: PoolEntry): void {
    this.#entries.delete(entry.key);
    for (const d of entry.deliveries) d.pending.delete(entry.key);
  }

  /** An LRP with a recorded placement error counts as delivered; the converger owns its retry now. */
  markSettledForAck(entry: PoolEntry): void {
    for (const d of entry.deliveries) if (d.kind === 'lrp') d.pending.delete(entry.key);
  }

  /** The outbox ids whose work is all settled, no longer tracked once returned. */
  takeAckable(): { readonly lrpIds: number[]; readonly taskIds: number[] } {
    const lrpIds: number[] = [];
    const taskIds: number[] = [];
    for (const d of this.#open) {
      if (d.pending.size > 0) continue;
      this.#open.delete(d);
      (d.kind === 'lrp' ? lrpIds : taskIds).push(...d.ids);
    }
    return { lrpIds, taskIds };
  }
}
