/**
 * The records of a pod's log on disk, in the CRI container log format (what the kubelet, CRI-O's
 * conmon and containerd write): one record a line, `TIME STREAM TAG CONTENT`, where TIME is when
 * stage 1 read the bytes from the app's pipe (ISO-8601, UTC), STREAM is `stdout` or `stderr`, and
 * TAG is `F` when the app's line ended there or `P` when it did not (a line cut to fit a record,
 * or bytes the app wrote without a newline yet). The app's own bytes are the CONTENT of its
 * records in order, each followed by a newline when its tag is `F`.
 *
 * A log written by a berth from before per-line times holds the app's bytes as they were. A
 * reader tells them apart by the log's first line (`LogRecordDecoder`), and in a framed log takes a
 * line that is not a record (the stage-1 holder's own last words, written straight to the file)
 * as a line of stderr. This module is on the path of every `berth run`: node:fs and Buffer only.
 */

export type LogStream = 'stdout' | 'stderr';

export interface LogRecord {
  /** ISO-8601; undefined in a log written before records had times. */
  readonly time: string | undefined;
  /** undefined in a log written before records had streams. */
  readonly stream: LogStream | undefined;
  /** The app's line goes on in the next record of its stream (no newline after this content). */
  readonly partial: boolean;
  readonly content: Buffer;
  /** Bytes of the log file this record took, its newline included. */
  readonly bytes: number;
}

/** Content bytes of one record at most: a longer line is cut into several (tagged P, then F). */
export const maxRecordContent = 16 * 1024;

const newline = 0x0a;
const recordHead = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?Z) (stdout|stderr) ([PF]) /;
/** The longest head: a time with nanoseconds, `stderr`, the tag and three spaces. */
const maxHeadBytes = 30 + 1 + 6 + 1 + 1 + 1;

/**
 * The records of `chunk`, read from `stream` at `time`: one record per line of the chunk, a
 * trailing part without its newline tagged P, lines longer than `maxContent` cut. Every newline
 * of the result ends a record (content never holds one), which is where a writer may rotate.
 * Built as a latin1 string, which maps each byte to one character and back: a flooding app's
 * pipe delivers 64 KiB of short lines at a time, and copying each line into a buffer of its own
 * costs far more than one join.
 */
export function encodeLogRecords(
  stream: LogStream,
  chunk: Uint8Array,
  time: Date,
  maxContent: number = maxRecordContent,
): Buffer {
  const stamp = time.toISOString();
  const full = `${stamp} ${stream} F `;
  const lines = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength).toString('latin1').split('\n');
  const rest = lines.pop() ?? '';
  let long = rest.length > maxContent;
  for (let i = 0; i < lines.length && !long; i++) long = (lines[i] as string).length > maxContent;
  let text = lines.length > 0 ? `${full}${lines.join(`\n${full}`)}\n` : '';
  if (long) {
    const part = `${stamp} ${stream} P `;
    text = '';
    for (const line of lines) {
      let at = 0;
      for (; line.length - at > maxContent; at += maxContent)
        text += `${part}${line.slice(at, at + maxContent)}\n`;
      text += `${full}${line.slice(at)}\n`;
    }
    for (let at = 0; at < rest.length; at += maxContent)
      text += `${part}${rest.slice(at, at + maxContent)}\n`;
  } else if (rest !== '') text += `${stamp} ${stream} P ${rest}\n`;
  return Buffer.from(text, 'latin1');
}

/**
 * Turns the bytes of a pod's log, from the start of a file or of a record, into records. The first
 * line decides: a record means a framed log, anything else a log from an older berth, whose lines
 * become records without a time or stream. Holds at most one unfinished line, bounded: a line of
 * an old log longer than `maxRecordContent` comes out in pieces tagged partial.
 */
export class LogRecordDecoder {
  #framed: boolean | undefined;
  #rest: Buffer = Buffer.alloc(0);
  #lastTime: string | undefined;

  /** Whether the log is framed; undefined until its first line (or its first bytes) is seen. */
  get framed(): boolean | undefined {
    return this.#framed;
  }

  push(chunk: Uint8Array): LogRecord[] {
    let data: Buffer =
      this.#rest.length > 0
        ? Buffer.concat([this.#rest, chunk])
        : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    const records: LogRecord[] = [];
    for (;;) {
      const end = data.indexOf(newline);
      if (end === -1) {
        // A record's line is bounded; an old log's is not: cut it, as the framed writer does.
        if (data.length < maxRecordContent + maxHeadBytes) break;
        if (this.#framed === undefined)
          this.#framed = recordHead.test(data.toString('latin1', 0, maxHeadBytes));
        records.push(this.#unframed(data.subarray(0, maxRecordContent), true, maxRecordContent));
        data = data.subarray(maxRecordContent);
        continue;
      }
      records.push(this.#line(data.subarray(0, end), end + 1));
      data = data.subarray(end + 1);
    }
    this.#rest = Buffer.from(data);
    return records;
  }

  /** The last bytes, when the log ends without a newline (an app that is still writing its line). */
  end(): LogRecord[] {
    const rest = this.#rest;
    this.#rest = Buffer.alloc(0);
    if (rest.length === 0) return [];
    const record = this.#line(rest, rest.length);
    return [{ ...record, partial: true }];
  }

  #line(line: Buffer, bytes: number): LogRecord {
    const head = recordHead.exec(line.toString('latin1', 0, Math.min(line.length, maxHeadBytes)));
    if (this.#framed === undefined) this.#framed = head !== null;
    if (!this.#framed || !head) return this.#unframed(line, false, bytes);
    const time = head[1] ?? '';
    this.#lastTime = time;
    const stream: LogStream = head[2] === 'stderr' ? 'stderr' : 'stdout';
    return { time, stream, partial: head[3] === 'P', content: line.subarray(head[0].length), bytes };
  }

  /** A line that is not a record: the app's, in an old log; in a framed log, the holder's own. */
  #unframed(content: Buffer, partial: boolean, bytes: number): LogRecord {
    return this.#framed
      ? { time: this.#lastTime, stream: 'stderr', partial, content, bytes }
      : { time: undefined, stream: undefined, partial, content, bytes };
  }
}

/** The app's bytes a record holds: its content, and the newline it ended with unless partial. */
export function recordBytes(record: LogRecord): Buffer {
  return record.partial ? record.content : Buffer.concat([record.content, Buffer.from('\n')]);
}
