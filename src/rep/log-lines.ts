import { Writable } from 'node:stream';
import { type LogRecord, LogRecordDecoder, type LogStream } from '../runtime/index.js';

/** One line of a container's log as the rep streams it: NDJSON, one object a line. */
export interface LogLine {
  /** ISO-8601: when the line was written (see LogLineWriter for logs from an older berth). */
  readonly ts: string;
  /** Which of the app's streams printed it; absent in a log from an older berth. */
  readonly stream?: LogStream;
  readonly line?: string;
  /** `live`: the backlog has been sent, lines from here on are read as they are written. */
  readonly event?: 'live';
}

/** Longer lines are cut here (and the rest starts a new line): one line never holds a stream. */
export const maxLogLineBytes = 16 * 1024;

export interface LogLineWriterOptions {
  /** Bytes already in the log when the stream began: its backlog. */
  readonly backlogBytes: number;
  /** The time given to backlog lines of a log from an older berth, which keeps no times: its last write. */
  readonly backlogTime: Date;
  /** Keep only the last N backlog lines (`--tail`); undefined: all. */
  readonly tail?: number | undefined;
  /**
   * Not following: the log as it was when the request came, its backlog only. A running app keeps
   * writing while the backlog is read; without this, what it wrote meanwhile came after the `--tail`
   * lines and a tail of 2 could print 3.
   */
  readonly snapshot?: boolean;
  /** Drop lines stamped before this (`--since`). */
  readonly sinceMs?: number | undefined;
  readonly now?: () => Date;
  /** Receives each line's NDJSON text; returns false when the destination is full (backpressure). */
  readonly emit: (text: string) => boolean;
  /** Resolves once a full destination has room again (or is gone). */
  readonly drained: () => Promise<void>;
}

/** A line of one stream whose records came so far (its P records), with its first record's time. */
interface OpenLine {
  readonly ts: string;
  readonly parts: Buffer[];
  bytes: number;
}

/**
 * Turns the bytes of a pod's log (pod-log-reader.ts's followLog or copyLog) into lines with their
 * time and stream. The log's records (pod-log-format.ts) carry both: a line's time is when stage 1
 * read its first bytes from the app's pipe, and a line the app wrote in pieces (P records) is
 * joined per stream. The first `backlogBytes` are the backlog: kept only as their last `tail`
 * lines and sent once the backlog has been read; every later line is sent as it is read.
 *
 * A log from an older berth keeps neither times nor streams: its live lines are stamped when the
 * rep reads them (within the follower's wake-up of when they were written), its backlog lines with
 * the log's modification time.
 */
export class LogLineWriter extends Writable {
  readonly #o: LogLineWriterOptions;
  readonly #decoder = new LogRecordDecoder();
  readonly #open = new Map<LogStream | undefined, OpenLine>();
  #seen = 0;
  #backlog: LogLine[] | undefined = [];

  constructor(options: LogLineWriterOptions) {
    super({ decodeStrings: true });
    this.#o = options;
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.#records(this.#decoder.push(chunk)).then(() => callback(), callback);
  }

  /** Goes live at once when there is no backlog (an empty log), before any byte arrives. */
  begin(): Promise<void> {
    return this.#o.backlogBytes === 0 ? this.#flushBacklog() : Promise.resolve();
  }

  /**
   * At `end()`: a last line without its newline, lines still open, and the backlog when it ended
   * short of `backlogBytes` (the log rotated meanwhile).
   */
  override _final(callback: (error?: Error | null) => void): void {
    this.#finish().then(() => callback(), callback);
  }

  async #finish(): Promise<void> {
    await this.#records(this.#decoder.end());
    for (const stream of [...this.#open.keys()]) await this.#close(stream);
    await this.#flushBacklog();
  }

  async #records(records: readonly LogRecord[]): Promise<void> {
    for (const record of records) {
      this.#seen += record.bytes;
      const stream = record.stream;
      let open = this.#open.get(stream);
      if (!open) {
        const ts = record.time ?? (this.#backlog ? this.#o.backlogTime : this.#now()).toISOString();
        open = { ts, parts: [], bytes: 0 };
        this.#open.set(stream, open);
      }
      open.parts.push(record.content);
      open.bytes += record.content.length;
      if (!record.partial || open.bytes >= maxLogLineBytes) await this.#close(stream);
      if (this.#backlog && this.#seen >= this.#o.backlogBytes) await this.#flushBacklog();
    }
  }

  /** Sends a stream's open line, cut into lines of at most maxLogLineBytes. */
  async #close(stream: LogStream | undefined): Promise<void> {
    const open = this.#open.get(stream);
    if (!open) return;
    this.#open.delete(stream);
    const bytes = Buffer.concat(open.parts, open.bytes);
    for (let at = 0; at === 0 || at < bytes.length; at += maxLogLineBytes) {
      const text = bytes
        .toString('utf8', at, Math.min(bytes.length, at + maxLogLineBytes))
        .replace(/\r$/, '');
      await this.#line({ ts: open.ts, ...(stream ? { stream } : {}), line: text });
    }
  }

  async #line(line: LogLine): Promise<void> {
    if (this.#backlog) {
      // Without --tail every backlog line is sent as read: nothing of a large log is held.
      if (this.#o.tail === undefined) return this.#send(line);
      this.#backlog.push(line);
      if (this.#backlog.length > this.#o.tail) this.#backlog.shift();
      return;
    }
    if (this.#o.snapshot) return;
    await this.#send(line);
  }

  async #flushBacklog(): Promise<void> {
    const lines = this.#backlog;
    if (!lines) return;
    this.#backlog = undefined;
    for (const line of lines) await this.#send(line);
    if (!this.#o.emit(`${JSON.stringify({ ts: this.#now().toISOString(), event: 'live' })}\n`))
      await this.#o.drained();
  }

  #now(): Date {
    return (this.#o.now ?? (() => new Date()))();
  }

  async #send(line: LogLine): Promise<void> {
    if (this.#o.sinceMs !== undefined && Date.parse(line.ts) < this.#o.sinceMs) return;
    if (!this.#o.emit(`${JSON.stringify(line)}\n`)) await this.#o.drained();
  }
}
