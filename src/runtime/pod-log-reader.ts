import { closeSync, existsSync, fstatSync, openSync, readSync, statSync, watch } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { logDroppedMarker, logFileNames } from './pod-log.js';
import { type LogRecord, LogRecordDecoder, recordBytes } from './pod-log-format.js';

/**
 * Reads a pod's rotated log (pod-log.ts) in bounded pieces: never a whole file into memory, so a
 * pod that wrote gigabytes costs its reader no more than one chunk (or the tail it asked for).
 */

const chunkBytes = 64 * 1024;

/** The end of a pod's log, as finalization and obituaries keep it. */
export interface LogTail {
  /** What the app wrote (records' content, without their times and streams). */
  readonly text: string;
  /** Bytes of log on disk (`log.1` and `log`), of which `text` is the end. */
  readonly size: number;
  /** `text` is not all the app wrote: the tail was cut, or rotation dropped older output. */
  readonly truncated: boolean;
}

/** What finalization keeps of a log by default: the end, since the end says how it finished. */
export const defaultLogTailBytes = 1024 * 1024;

interface OpenLogFile {
  readonly fd: number;
  readonly ino: number;
  readonly size: number;
}

function openLogFile(path: string): OpenLogFile | undefined {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return undefined; // not written yet, or rotated away meanwhile
  }
  const { ino, size } = fstatSync(fd);
  return { fd, ino, size };
}

function inodeOf(path: string): number | undefined {
  try {
    return statSync(path).ino;
  } catch {
    return undefined;
  }
}

/**
 * The log's files, oldest first, opened together. `log` is opened first: if a rotation renames it
 * before `log.1` is opened, both opens reach the same file, which is then read once.
 */
function openLogFiles(podDir: string): OpenLogFile[] {
  const current = openLogFile(join(podDir, logFileNames.current));
  const rotated = openLogFile(join(podDir, logFileNames.rotated));
  if (current && rotated && current.ino === rotated.ino) {
    closeSync(rotated.fd);
    return [current];
  }
  return [rotated, current].filter((f): f is OpenLogFile => f !== undefined);
}

/**
 * The lines of framed records, each where its first record is. A partial record's line goes on in
 * the next record of its own stream, not in whatever record comes next: stage 1 reads stdout and
 * stderr from two pipes, so `sh: ` (busybox writes an error's prefix on its own) can be followed
 * in the file by a whole line of stdout before the rest of the error.
 */
function joinRecordLines(records: readonly LogRecord[]): string {
  const lines: Buffer[][] = [];
  const open = new Map<string | undefined, Buffer[]>();
  for (const record of records) {
    let line = open.get(record.stream);
    if (!line) {
      line = [];
      lines.push(line);
    }
    line.push(recordBytes(record));
    if (record.partial) open.set(record.stream, line);
    else open.delete(record.stream);
  }
  return Buffer.concat(lines.flat()).toString('utf8');
}

/**
 * The app's output in the end of a log: the content of its records, or, in a log from an older
 * berth, the bytes as they are. A framed tail that was cut starts at its first whole record.
 */
function tailText(tail: Buffer, cut: boolean): string {
  const firstLine = cut ? tail.indexOf(0x0a) : -1;
  const decoder = new LogRecordDecoder();
  const records = [...decoder.push(tail.subarray(firstLine + 1)), ...decoder.end()];
  if (decoder.framed) return joinRecordLines(records);
  let start = 0;
  // A tail cut inside a UTF-8 sequence starts at the next character.
  if (cut) while (start < tail.length && ((tail[start] ?? 0) & 0xc0) === 0x80) start++;
  return tail.subarray(start).toString('utf8');
}

/** The last `maxBytes` of a pod's log (across `log.1` and `log`), decoded as UTF-8. */
export function readLogTail(podDir: string, maxBytes: number = defaultLogTailBytes): LogTail {
  const files = openLogFiles(podDir);
  try {
    const size = files.reduce((sum, f) => sum + f.size, 0);
    const take = Math.min(size, maxBytes);
    const buffer = Buffer.alloc(take);
    // Fill from the end: the newest file's end last, older bytes before it.
    let end = take;
    for (const file of [...files].reverse()) {
      if (end === 0) break;
      const length = Math.min(file.size, end);
      let got = 0;
      while (got < length) {
        const n = readSync(file.fd, buffer, end - length + got, length - got, file.size - length + got);
        if (n === 0) break;
        got += n;
      }
      end -= length;
    }
    return {
      text: tailText(buffer, take < size),
      size,
      truncated: take < size || existsSync(join(podDir, logDroppedMarker)),
    };
  } finally {
    for (const f of files) closeSync(f.fd);
  }
}

/** Writes a chunk, waiting while the destination's buffer is full (a slow reader of a pipe). */
async function writeOut(out: NodeJS.WritableStream, chunk: Buffer): Promise<void> {
  if (out.write(chunk)) return;
  await new Promise<void>((resolve) => {
    const done = () => {
      out.off('drain', done);
      out.off('close', done);
      out.off('error', done);
      resolve();
    };
    out.on('drain', done);
    out.on('close', done);
    out.on('error', done);
  });
}

/**
 * What `berth logs POD` prints: the bytes of a pod's log (copyLog, followLog) written as the app
 * wrote them, its stdout's to `stdout` and its stderr's to `stderr` (as `docker logs` does), with
 * `timestamps` each line started with its time. A log from an older berth goes to `stdout` whole,
 * without times. End it (`end()`) to write an unfinished last line.
 */
export class LogRecordWriter extends Writable {
  readonly #out: { readonly stdout: NodeJS.WritableStream; readonly stderr: NodeJS.WritableStream };
  readonly #timestamps: boolean;
  readonly #decoder = new LogRecordDecoder();
  /** Streams whose last record was partial: their next record goes on the same line. */
  readonly #midLine = new Set<string | undefined>();

  constructor(
    out: { readonly stdout: NodeJS.WritableStream; readonly stderr: NodeJS.WritableStream },
    options: { readonly timestamps?: boolean } = {},
  ) {
    super();
    this.#out = out;
    this.#timestamps = options.timestamps ?? false;
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.#print(this.#decoder.push(chunk)).then(() => callback(), callback);
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.#print(this.#decoder.end()).then(() => callback(), callback);
  }

  /** Consecutive records of one stream go out in one write. */
  async #print(records: readonly LogRecord[]): Promise<void> {
    let run: Buffer[] = [];
    let sink: NodeJS.WritableStream | undefined;
    for (const record of records) {
      const to = record.stream === 'stderr' ? this.#out.stderr : this.#out.stdout;
      if (sink !== to && run.length > 0 && sink) {
        await writeOut(sink, Buffer.concat(run));
        run = [];
      }
      sink = to;
      if (this.#timestamps && record.time !== undefined && !this.#midLine.has(record.stream))
        run.push(Buffer.from(`${record.time} `));
      run.push(recordBytes(record));
      if (record.partial) this.#midLine.add(record.stream);
      else this.#midLine.delete(record.stream);
    }
    if (sink && run.length > 0) await writeOut(sink, Buffer.concat(run));
  }
}

/** Ends `out` and resolves once it has written everything (a LogRecordWriter's last line). */
export function endLog(out: Writable): Promise<void> {
  return new Promise((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));
}

/** Copies `fd` from `offset` to its end in chunks; returns the new offset. */
async function copyFrom(fd: number, offset: number, out: NodeJS.WritableStream): Promise<number> {
  for (;;) {
    const chunk = Buffer.allocUnsafe(chunkBytes);
    const n = readSync(fd, chunk, 0, chunk.length, offset);
    if (n === 0) return offset;
    offset += n;
    await writeOut(out, chunk.subarray(0, n));
  }
}

/** `berth logs`: the whole log as it is now (`log.1`, then `log`), in chunks. */
export async function copyLog(podDir: string, out: NodeJS.WritableStream): Promise<void> {
  const files = openLogFiles(podDir);
  try {
    for (const file of files) await copyFrom(file.fd, 0, out);
  } finally {
    for (const f of files) closeSync(f.fd);
  }
}

/**
 * `berth logs -f`: the log so far, then whatever is appended, across rotations, until `ended`
 * settles (the pod's lock dropped) and the last bytes are copied. The file being read is held
 * open, so a rotation that renames it loses nothing: it is read to its end, then its successor
 * (found by inode: `log` if the followed file is now `log.1`, else `log.1` when the follower fell
 * a whole file behind) from its start. A follower more than two files behind skips what rotation
 * already dropped.
 */
export async function followLog(
  podDir: string,
  out: NodeJS.WritableStream,
  ended: Promise<unknown>,
): Promise<void> {
  const currentPath = join(podDir, logFileNames.current);
  const rotatedPath = join(podDir, logFileNames.rotated);
  const [older, newest] = (() => {
    const files = openLogFiles(podDir);
    return files.length === 2 ? [files[0], files[1]] : [undefined, files[0]];
  })();
  let file: OpenLogFile | undefined = newest;
  let offset = 0;
  if (older) {
    try {
      await copyFrom(older.fd, 0, out);
    } finally {
      closeSync(older.fd);
    }
  }

  /** The file that follows the one being read, once it has been rotated away. */
  const successor = (): OpenLogFile | undefined => {
    if (!file) return openLogFile(currentPath);
    const current = inodeOf(currentPath);
    if (current === file.ino) return undefined; // still the current file: nothing after it yet
    const rotated = inodeOf(rotatedPath);
    if (rotated === file.ino) return current === undefined ? undefined : openLogFile(currentPath);
    return openLogFile(rotated === undefined ? currentPath : rotatedPath);
  };

  const pump = async (): Promise<void> => {
    for (;;) {
      if (file) offset = await copyFrom(file.fd, offset, out);
      const next = successor();
      if (!next) return;
      if (file) {
        // Bytes written between the last read and the rename are still in it.
        offset = await copyFrom(file.fd, offset, out);
        closeSync(file.fd);
      }
      file = next;
      offset = 0;
    }
  };

  // One pump at a time; a change while one runs asks for another pass after it.
  let running: Promise<void> | undefined;
  let again = false;
  const kick = (): Promise<void> => {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      do {
        again = false;
        await pump();
      } while (again);
      running = undefined;
    })();
    return running;
  };

  // The pod dir, not the file: a watch on the file would stay on it after it is renamed away.
  const watcher = watch(podDir, (_event, name) => {
    if (name === null || String(name).startsWith(logFileNames.current)) void kick();
  });
  // inotify can drop events under a flood; a slow poll keeps the follower going regardless.
  const poll = setInterval(() => void kick(), 500);
  try {
    await kick();
    await ended;
  } finally {
    watcher.close();
    clearInterval(poll);
  }
  while (running) await running;
  await kick();
  if (file) closeSync(file.fd);
}
