import { Writable } from 'node:stream';

/** One line of a container's log as the rep streams it: NDJSON, one object a line. */
export interface LogLine {
  /** ISO-8601: when the rep read the line (see LogLineWriter for lines already on disk). */
  readonly ts: string;
  readonly line?: string;
  /** `live`: the backlog has been sent, lines from here on are read as they are written. */
  readonly event?: 'live';
}

/** Longer lines are cut here (and the rest starts a new line): one line never holds a stream. */
export const maxLogLineBytes = 16 * 1024;

export interface LogLineWriterOptions {
  /** Bytes already in the log when the stream began: its backlog. */
  readonly backlogBytes: number;
  /** The time given to backlog lines (the log's last write: the pod log keeps no times per line). */
  readonly backlogTime: Date;
  /** Keep only the last N backlog lines (`--tail`); undefined: all. */
  readonly tail?: number | undefined;
  /** Drop lines stamped before this (`--since`). */
  readonly sinceMs?: number | undefined;
  readonly now?: () => Date;
  /** Receives each line's NDJSON text; returns false when the destination is full (backpressure). */
  readonly emit: (text: string) => boolean;
  /** Resolves once a full destination has room again (or is gone). */
  readonly drained: () => Promise<void>;
}

/**
 * Turns the raw bytes of a pod's log (pod-log-reader.ts's followLog or copyLog) into stamped
 * lines. The first `backlogBytes` are the backlog: kept only as their last `tail` lines and sent
 * once the backlog has been read; every later byte is live and stamped as it is read. The pod log
 * keeps neither a time nor the stream (stdout and stderr share one pipe so their order is kept),
 * so a live line's time is when the rep read it, within the follower's wake-up of when it was
 * written, and a backlog line's is the log's modification time.
 */
export class LogLineWriter extends Writable {
  readonly #o: LogLineWriterOptions;
  #seen = 0;
  #partial = Buffer.alloc(0);
  #backlog: LogLine[] | undefined = [];

  constructor(options: LogLineWriterOptions) {
    super({ decodeStrings: true });
    this.#o = options;
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.#take(chunk).then(() => callback(), callback);
  }

  /** Goes live at once when there is no backlog (an empty log), before any byte arrives. */
  begin(): Promise<void> {
    return this.#o.backlogBytes === 0 ? this.#flushBacklog() : Promise.resolve();
  }

  /** At `end()`: the backlog when it ended short of `backlogBytes` (the log rotated meanwhile), and a last partial line. */
  override _final(callback: (error?: Error | null) => void): void {
    this.#finish().then(() => callback(), callback);
  }

  async #finish(): Promise<void> {
    await this.#flushBacklog();
    if (this.#partial.length > 0) await this.#line(this.#partial);
    this.#partial = Buffer.alloc(0);
  }

  async #take(chunk: Buffer): Promise<void> {
    let data = this.#partial.length > 0 ? Buffer.concat([this.#partial, chunk]) : chunk;
    for (;;) {
      const newline = data.indexOf(0x0a);
      const end = newline === -1 ? (data.length >= maxLogLineBytes ? maxLogLineBytes : -1) : newline;
      if (end === -1) break;
      const line = data.subarray(0, Math.min(end, maxLogLineBytes));
      const used = newline === end ? end + 1 : line.length;
      this.#seen += used;
      await this.#line(line);
      data = data.subarray(used);
      if (this.#backlog && this.#seen >= this.#o.backlogBytes) await this.#flushBacklog();
    }
    this.#partial = Buffer.from(data);
  }

  async #line(bytes: Buffer): Promise<void> {
    const text = bytes.toString('utf8').replace(/\r$/, '');
    if (this.#backlog) {
      const line = { ts: this.#o.backlogTime.toISOString(), line: text };
      // Without --tail every backlog line is sent as read: nothing of a large log is held.
      if (this.#o.tail === undefined) return this.#send(line);
      this.#backlog.push(line);
      if (this.#backlog.length > this.#o.tail) this.#backlog.shift();
      return;
    }
    await this.#send({ ts: this.#now().toISOString(), line: text });
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
