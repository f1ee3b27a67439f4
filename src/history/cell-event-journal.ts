import {
  closeSync,
  existsSync,
  fdatasyncSync,
  ftruncateSync,
  mkdirSync,
  fdatasync as nodeFdatasync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
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

/** Delivery reads the segment this much at a time (whole lines of it). */
const readChunkBytes = 1 << 20;

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
 * A process appends to one segment for its whole life. Delivery posts the durable lines past the
 * offset acknowledged so far, in batches, moves the offset past each acknowledged batch, and
 * empties the segment (ftruncate) once everything written is acknowledged. Closing and deleting a
 * segment per delivery, with the directory synced twice, was about a sixth of a simulated cell's
 * CPU in a burst (docs/performance.md, round 22). Segments left by an earlier process are
 * delivered first, whole, and deleted once acknowledged. A crash between an ack and the offset's
 * move (or the truncate's reaching the disk) re-delivers records the server dedupes; a crash
 * mid-append leaves a torn last line, which is skipped. A restarted cell never appends to an old
 * segment.
 */
export class CellEventJournal {
  readonly dir: string;
  readonly #maxBatch: number;
  readonly #syncData: (fd: number) => Promise<void>;
  /** The segment this process appends to; those before it are an earlier process's. */
  readonly #segment: number;
  /** Segments an earlier process left, oldest first, until delivered and deleted. */
  #earlier: number[];
  #fd: number | undefined;
  /** Bytes written to the segment, and the prefix of them the server acknowledged. */
  #written = 0;
  #acknowledged = 0;
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
    this.#earlier = this.#segments();
    this.#segment = (this.#earlier.at(-1) ?? 0) + 1;
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
      // a+: appends, and positioned reads of what delivery posts.
      this.#fd = openSync(join(this.dir, segmentName(this.#segment)), 'a+', 0o600);
      this.#newFile = true;
    }
    this.#written += writeSync(this.#fd, `${JSON.stringify(record)}\n`);
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
    const earlier = this.#earlier.flatMap((n) => readSegment(join(this.dir, segmentName(n))));
    const current = join(this.dir, segmentName(this.#segment));
    if (!existsSync(current)) return earlier;
    return [...earlier, ...parseLines(readFileSync(current).subarray(this.#acknowledged).toString('utf8'))];
  }

  /**
   * Delivers everything journaled so far; resolves with how many records were posted, or rejects
   * with the first failed post (what was acknowledged before it stays acknowledged). Calls never
   * overlap: a second caller waits for the running delivery.
   */
  deliverOnce(post: (batch: readonly IngestRecord[]) => Promise<void>): Promise<number> {
    const run = async (): Promise<number> => {
      let sent = await this.#deliverEarlier(post);
      // Lines written before this point are durable once no sync runs (or the last one failed,
      // and they are delivered from the file all the same).
      await this.#synced();
      const fd = this.#fd;
      const end = this.#written;
      if (fd === undefined || end === this.#acknowledged) return sent;
      // A read at a time, however long the server was away: what one holds is posted first.
      let at = this.#acknowledged;
      while (at < end) {
        let text = this.#read(at, Math.min(end, at + readChunkBytes));
        // Whole lines only; a line longer than the chunk is read whole.
        if (!text.includes('\n')) text = this.#read(at, end);
        const lines = text.slice(0, text.lastIndexOf('\n') + 1).split('\n');
        lines.pop(); // after the last newline: nothing, or the part of a line the next read gets
        if (lines.length === 0) break;
        for (let i = 0; i < lines.length; i += this.#maxBatch) {
          const chunk = lines.slice(i, i + this.#maxBatch);
          const batch = parseLines(chunk.join('\n'));
          if (batch.length > 0) await post(batch);
          sent += batch.length;
          at += chunk.reduce((bytes, line) => bytes + Buffer.byteLength(line) + 1, 0);
          this.#acknowledged = at;
        }
      }
      // All acknowledged and nothing written meanwhile: the segment starts over, in place. Appends
      // are synchronous, so none can come between this check and the truncate.
      if (this.#fd === fd && this.#acknowledged === this.#written) {
        ftruncateSync(fd, 0);
        this.#written = 0;
        this.#acknowledged = 0;
      }
      return sent;
    };
    const previous = this.#delivering ?? Promise.resolve(0);
    // catch-all: the earlier caller got its failure; this delivery starts afresh all the same.
    const next = previous.catch(() => 0).then(run);
    this.#delivering = next;
    return next;
  }

  /** An earlier process's segments, each posted whole and deleted once acknowledged. */
  async #deliverEarlier(post: (batch: readonly IngestRecord[]) => Promise<void>): Promise<number> {
    let sent = 0;
    while (this.#earlier.length > 0) {
      const path = join(this.dir, segmentName(this.#earlier[0] ?? 0));
      const records = readSegment(path);
      for (let i = 0; i < records.length; i += this.#maxBatch) {
        const batch = records.slice(i, i + this.#maxBatch);
        await post(batch);
        sent += batch.length;
      }
      unlinkSync(path);
      this.#earlier.shift();
      if (this.#earlier.length === 0) await syncDirAsync(this.dir);
    }
    return sent;
  }

  /** The segment's bytes in [from, to), as text. */
  #read(from: number, to: number): string {
    if (this.#fd === undefined || to <= from) return '';
    const buffer = Buffer.alloc(to - from);
    let got = 0;
    while (got < buffer.length) {
      const n = readSync(this.#fd, buffer, got, buffer.length - got, from + got);
      if (n === 0) break;
      got += n;
    }
    return buffer.toString('utf8', 0, got);
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
  return existsSync(path) ? parseLines(readFileSync(path, 'utf8')) : [];
}

function parseLines(text: string): IngestRecord[] {
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
