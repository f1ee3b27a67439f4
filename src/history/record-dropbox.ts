import { mkdirSync, readdirSync, readFileSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { type BackoffPolicy, errnoCode, runLoop, type Wakeup, writeFileAtomic } from '../core/index.js';
import { deliveryBackoff } from './cell-event-journal.js';
import type { IngestRecord } from './ingest-records.js';

const dropPattern = /^\d{13}-\d+-[0-9a-f]{8}\.json$/;

/**
 * History records left by short-lived processes (`berth run`, `status`, `gc`) for a long-lived
 * one (the cell on the same data dir) to deliver. Many writers at once and a deliverer that may
 * crash: so every drop is its own file, written whole with rename(2) and fsync, named so that
 * name order is time order; delivery posts files in that order and deletes each only once the
 * server acknowledged it (the server dedupes a re-delivery after a crash between the two).
 */
export class RecordDropbox {
  constructor(readonly dir: string) {}

  drop(records: readonly IngestRecord[]): void {
    if (records.length === 0) return;
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    const random = Math.floor(Math.random() * 0x100000000)
      .toString(16)
      .padStart(8, '0');
    const name = `${String(Date.now()).padStart(13, '0')}-${process.pid}-${random}.json`;
    writeFileAtomic(join(this.dir, name), JSON.stringify(records), { durable: true, mode: 0o600 });
  }

  /** Dropped records not yet delivered, oldest first. */
  pending(): IngestRecord[] {
    return this.#files().flatMap((f) => this.#read(f));
  }

  /** Posts every drop, oldest first; resolves with the number of records posted. */
  async deliverOnce(post: (batch: readonly IngestRecord[]) => Promise<void>): Promise<number> {
    let sent = 0;
    for (const file of this.#files()) {
      const records = this.#read(file);
      if (records.length > 0) await post(records);
      unlinkSync(join(this.dir, file));
      sent += records.length;
    }
    return sent;
  }

  /**
   * Delivers every `intervalMs` until aborted, and at once when `wakeup` rings (a DirWatch on the
   * dir); after failures, with exponential back-off.
   */
  runDelivery(options: {
    readonly post: (batch: readonly IngestRecord[]) => Promise<void>;
    readonly signal: AbortSignal;
    /** Asked before each pause when a function (a watch that broke falls back to polling). */
    readonly intervalMs?: number | (() => number);
    readonly wakeup?: Wakeup;
    readonly backoff?: BackoffPolicy;
    readonly onError?: (err: unknown) => void;
    /** Runs before each pass (e.g. to turn other leftovers into drops). */
    readonly before?: () => Promise<unknown>;
  }): Promise<void> {
    return runLoop({
      name: 'history dropbox delivery',
      signal: options.signal,
      intervalMs: options.intervalMs ?? 2_000,
      backoff: options.backoff ?? deliveryBackoff,
      ...(options.onError ? { onError: options.onError } : {}),
      ...(options.wakeup ? { wakeup: options.wakeup } : {}),
      round: async () => {
        await options.before?.();
        await this.deliverOnce(options.post);
      },
    });
  }

  #files(): string[] {
    try {
      return readdirSync(this.dir)
        .filter((f) => dropPattern.test(f))
        .sort();
    } catch (err) {
      // No drop yet: the dir is made by the first drop. Any other failure is the caller's to see.
      if (errnoCode(err) === 'ENOENT') return [];
      throw err;
    }
  }

  #read(file: string): IngestRecord[] {
    try {
      return JSON.parse(readFileSync(join(this.dir, file), 'utf8')) as IngestRecord[];
    } catch {
      // catch-all: written whole by rename, so unreadable means foreign or damaged: dropped, not retried.
      return [];
    }
  }
}
