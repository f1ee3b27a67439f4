import {
  closeSync,
  existsSync,
  fdatasyncSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { type BackoffPolicy, runLoop, Wakeup } from '../core/index.js';
import type { ContainerLaunch } from './history-types.js';
import type { EventRecord, FinalizationRecord, IngestRecord } from './ingest-records.js';

/** One runtime/executor observation, as the cell reports it. */
export interface CellObservation {
  readonly container_id: string;
  /** Docker's vocabulary: create, start, die, kill, oom, destroy, stop, health_status, … */
  readonly event: string;
  /** When the runtime saw it (ISO-8601); kept as is through any outage. */
  readonly external_timestamp: string;
  readonly exit_code?: number | null;
  readonly message?: string | null;
  /** `event` when pushed by the runtime, `service` when found only by polling. */
  readonly entity_type: 'event' | 'service';
}

export interface CellEventJournalOptions {
  /** The journal's own directory (e.g. `<cell data dir>/history-journal`); created if missing. */
  readonly dir: string;
  /** Records per POST. */
  readonly maxBatch?: number;
}

export interface DeliveryLoopOptions {
  /** Sends one batch; resolves once the server committed it, rejects otherwise. */
  readonly post: (batch: readonly IngestRecord[]) => Promise<void>;
  readonly signal: AbortSignal;
  /** Default `deliveryBackoff`. */
  readonly backoff?: BackoffPolicy;
  /** Injected for tests; Math.random by default. */
  readonly random?: () => number;
  /** Called after each failed delivery with the error and the delay before the next try. */
  readonly onError?: (err: unknown, retryInMs: number) => void;
}

/**
 * How a cell's (or a short-lived process's) history delivery backs off while the server is away:
 * from 200 ms up to 30 s, jittered, so cells that lost the server together do not all come back in
 * the same millisecond.
 */
export const deliveryBackoff: BackoffPolicy = { initialMs: 200, capMs: 30_000, jitter: true };

/** A delivery loop woken by nothing still looks this often (a safety net, not the mechanism). */
const idleDeliveryMs = 60_000;

const segmentPattern = /^(\d{12})\.jsonl$/;

/**
 * The cell's append-only journal of what it observed, so nothing is lost while the server is
 * unreachable: every record is one JSON line, fdatasync'd before `record` returns. Delivery
 * closes the segment being written (later records go to a new one), posts closed segments in
 * order and in batches, and deletes a segment only once every batch of it was acknowledged.
 * A crash between ack and delete re-delivers records the server dedupes; a crash mid-append
 * leaves a torn last line, which is skipped. A restarted cell never appends to an old segment.
 */
export class CellEventJournal {
  readonly dir: string;
  readonly #maxBatch: number;
  #segment: number;
  #fd: number | undefined;
  /** Rung by every append, so a waiting delivery loop posts the new record at once. */
  readonly #appended = new Wakeup();
  #delivering: Promise<number> | undefined;

  constructor(options: CellEventJournalOptions) {
    this.dir = options.dir;
    this.#maxBatch = options.maxBatch ?? 500;
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    const last = this.#segments().at(-1);
    this.#segment = (last ?? 0) + 1;
  }

  /** Journals one runtime observation (the call the cell makes for each executor/runtime event). */
  record(observation: CellObservation): void {
    const record: EventRecord = {
      type: 'event',
      container_id: observation.container_id,
      event: observation.event,
      external_timestamp: observation.external_timestamp,
      entity_type: observation.entity_type,
      ...(observation.exit_code !== undefined ? { exit_code: observation.exit_code } : {}),
      ...(observation.message !== undefined ? { message: observation.message } : {}),
    };
    this.append(record);
  }

  /** Journals what was launched (becomes the container record and its `Created` item). */
  recordLaunch(
    container: ContainerLaunch,
    external_timestamp: string,
    by: { readonly userId?: string; readonly domain?: string } = {},
  ): void {
    this.append({
      type: 'launch',
      container,
      external_timestamp,
      ...(by.userId !== undefined ? { entity_type: 'user', entity_id: by.userId } : {}),
      ...(by.domain ? { domain: by.domain } : {}),
    });
  }

  recordFinalization(record: FinalizationRecord): void {
    this.append(record);
  }

  append(record: IngestRecord): void {
    if (this.#fd === undefined) {
      this.#fd = openSync(join(this.dir, segmentName(this.#segment)), 'a', 0o600);
      // The new file's name must survive a crash too, not only its content.
      syncDir(this.dir);
    }
    writeSync(this.#fd, `${JSON.stringify(record)}\n`);
    fdatasyncSync(this.#fd);
    this.#appended.wake();
  }

  /** Records journaled and not yet acknowledged (reads the segments; for tests and status). */
  pending(): IngestRecord[] {
    return this.#segments().flatMap((n) => readSegment(join(this.dir, segmentName(n))));
  }

  /**
   * Delivers everything journaled so far; resolves with how many records were posted, or rejects
   * with the first failed post (what was acknowledged before it stays deleted). Calls never
   * overlap: a second caller waits for the running delivery.
   */
  deliverOnce(post: (batch: readonly IngestRecord[]) => Promise<void>): Promise<number> {
    const run = async (): Promise<number> => {
      this.#rotate();
      let sent = 0;
      for (const n of this.#segments()) {
        if (n >= this.#segment) break;
        const path = join(this.dir, segmentName(n));
        const records = readSegment(path);
        for (let i = 0; i < records.length; i += this.#maxBatch) {
          const batch = records.slice(i, i + this.#maxBatch);
          await post(batch);
          sent += batch.length;
        }
        unlinkSync(path);
      }
      if (sent > 0) syncDir(this.dir);
      return sent;
    };
    const previous = this.#delivering ?? Promise.resolve(0);
    // catch-all: the earlier caller got its failure; this delivery starts afresh all the same.
    const next = previous.catch(() => 0).then(run);
    this.#delivering = next;
    return next;
  }

  /**
   * Delivers until `signal` aborts: right after each record (woken by `append`), and while the
   * server is unreachable, again after an exponential back-off.
   */
  runDelivery(options: DeliveryLoopOptions): Promise<void> {
    return runLoop({
      name: 'history journal delivery',
      signal: options.signal,
      intervalMs: idleDeliveryMs,
      wakeup: this.#appended,
      backoff: options.backoff ?? deliveryBackoff,
      ...(options.random ? { random: options.random } : {}),
      ...(options.onError ? { onError: options.onError } : {}),
      round: async () => {
        await this.deliverOnce(options.post);
      },
    });
  }

  close(): void {
    if (this.#fd !== undefined) closeSync(this.#fd);
    this.#fd = undefined;
  }

  #rotate(): void {
    if (this.#fd === undefined) return;
    closeSync(this.#fd);
    this.#fd = undefined;
    this.#segment++;
  }

  #segments(): number[] {
    if (!existsSync(this.dir)) return [];
    return readdirSync(this.dir)
      .flatMap((name) => {
        const match = segmentPattern.exec(name);
        return match ? [Number(match[1])] : [];
      })
      .sort((a, b) => a - b);
  }
}

function segmentName(n: number): string {
  return `${String(n).padStart(12, '0')}.jsonl`;
}

/** A torn or unreadable line (a crash mid-append) is skipped, never fatal. */
function readSegment(path: string): IngestRecord[] {
  const text = readFileSync(path, 'utf8');
  const records: IngestRecord[] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    try {
      records.push(JSON.parse(line) as IngestRecord);
    } catch {
      // catch-all: a torn write (a crash mid-append) is the last line; the rest of it never came.
    }
  }
  return records;
}

function syncDir(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
