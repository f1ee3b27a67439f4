import {
  closeSync,
  existsSync,
  fdatasyncSync,
  mkdirSync,
  fdatasync as nodeFdatasync,
  openSync,
  readdirSync,
  readFileSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { open } from 'node:fs/promises';
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
  /** fdatasync(2) of the segment's descriptor off the event loop; injected by tests to count them. */
  readonly syncData?: (fd: number) => Promise<void>;
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
 * unreachable: every record is one JSON line, written to the file before `record` returns (so a
 * crash of the process loses nothing) and made durable by a group commit: one fdatasync, off the
 * event loop, covers every line written before it started, and the next starts when it ends
 * (`#syncing`). A synchronous fdatasync per line cost the cell's event loop 1–10 ms a record on
 * this project's disks: a burst of starts stalled the rep for seconds, heartbeats missed their TTL
 * and the cell was declared lost (issue 20's scale harness). What a machine crash can take is the
 * lines of the last few milliseconds, as with any database's group commit.
 *
 * Delivery closes the segment being written (later records go to a new one) once its lines are
 * durable, posts closed segments in order and in batches, and deletes a segment only once every
 * batch of it was acknowledged. A crash between ack and delete re-delivers records the server
 * dedupes; a crash mid-append leaves a torn last line, which is skipped. A restarted cell never
 * appends to an old segment.
 */
export class CellEventJournal {
  readonly dir: string;
  readonly #maxBatch: number;
  readonly #syncData: (fd: number) => Promise<void>;
  #segment: number;
  #fd: number | undefined;
  /** The segment file is new: its name must be made durable with its first lines. */
  #newFile = false;
  /** Lines written that no finished or running fdatasync covers. */
  #unsynced = false;
  /** The group commit in flight, if any. */
  #syncing: Promise<void> | undefined;
  /** Rung by every append, so a waiting delivery loop posts the new record at once. */
  readonly #appended = new Wakeup();
  #delivering: Promise<number> | undefined;

  constructor(options: CellEventJournalOptions) {
    this.dir = options.dir;
    this.#maxBatch = options.maxBatch ?? 500;
    this.#syncData = options.syncData ?? fdatasyncFd;
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
      this.#newFile = true;
    }
    writeSync(this.#fd, `${JSON.stringify(record)}\n`);
    this.#unsynced = true;
    if (!this.#syncing) this.#syncing = this.#groupCommit(this.#fd);
    this.#appended.wake();
  }

  /**
   * fdatasyncs `fd` until no line is left unsynced (appends made while one runs are covered by
   * the next), with the journal dir too when the file is new. A failed sync is retried by the
   * next append's; the lines stay in the file either way.
   */
  async #groupCommit(fd: number): Promise<void> {
    try {
      while (this.#unsynced) {
        this.#unsynced = false;
        const newFile = this.#newFile;
        this.#newFile = false;
        await this.#syncData(fd);
        // The new file's name must survive a crash too, not only its content.
        if (newFile) await syncDirAsync(this.dir);
      }
    } catch {
      // catch-all: durability is best effort past the write itself (which succeeded); the next
      // append starts another sync, and delivery reads the lines from the file regardless.
      this.#unsynced = true;
    } finally {
      this.#syncing = undefined;
    }
  }

  /** Resolves once no group commit is running (lines written before the call are durable). */
  async #synced(): Promise<void> {
    while (this.#syncing) await this.#syncing;
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
      // The segment is closed only with no sync running on its descriptor.
      await this.#synced();
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
      if (sent > 0) await syncDirAsync(this.dir);
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

  /** Closes the segment, its lines made durable first (a sync still running finds it closed). */
  close(): void {
    if (this.#fd === undefined) return;
    if (this.#unsynced || this.#syncing) fdatasyncSync(this.#fd);
    // A sync still running must not start another on a descriptor number that may be reused.
    this.#unsynced = false;
    closeSync(this.#fd);
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

async function syncDirAsync(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** fdatasync(2) of a descriptor opened with openSync, on libuv's thread pool. */
function fdatasyncFd(fd: number): Promise<void> {
  return new Promise((resolve, reject) => nodeFdatasync(fd, (err) => (err ? reject(err) : resolve())));
}
