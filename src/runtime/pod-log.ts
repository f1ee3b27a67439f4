import { closeSync, existsSync, fstatSync, openSync, renameSync, writeSync } from 'node:fs';
import { InvalidArgumentError } from '../core/index.js';
import { podFiles } from './pod-dirs.js';
import { encodeLogRecords, type LogStream, maxRecordContent } from './pod-log-format.js';

/**
 * A pod's log: what its app writes to stdout and stderr, each line with its time and stream
 * (pod-log-format.ts), in the pod dir as `log`, rotated with a
 * size cap as podman's `log_size_max` and the kubelet's `containerLogMaxSize` do. When `log`
 * reaches the cap it becomes `log.1` (replacing the older one, whose output is dropped) and a new
 * `log` starts, so a pod never keeps more than 2 × the cap on disk, whatever its app writes.
 *
 * This module is on the path of every `berth run` and of the stage-1 holder: node:fs only.
 */

/** The kubelet's default `containerLogMaxSize`; podman has no cap by default, berth always has one. */
export const defaultLogSizeMax = 10 * 1024 * 1024;
/** Smaller caps would rotate on nearly every write. */
export const minLogSizeMax = 8 * 1024;
const newline = 0x0a;
/** Every size has a bound (issue 17): a cap past the disks berth runs on is a typo. */
export const maxLogSizeMax = 16 * 1024 ** 3;

/** The files of a pod's log, by name inside the pod dir. */
export const logFileNames = { rotated: `${podFiles.log}.1`, current: podFiles.log } as const;
/**
 * Present once a rotation dropped output (an older `log.1` was replaced): what is on disk is then
 * not everything the app wrote, which finalization reports as truncated.
 */
export const logDroppedMarker = 'log.dropped';

/** Parses `--log-size-max` as `--memory` is parsed: bytes, with an optional b/k/m/g suffix. */
export function parseLogSizeMax(text: string, flag = 'log-size-max'): number {
  const match = /^(\d+(?:\.\d+)?)([bkmg]?)$/i.exec(text.trim());
  const factor: Record<string, number> = { '': 1, b: 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 };
  if (!match)
    throw new InvalidArgumentError(`Invalid --${flag} "${text}": expected a size such as 512k or 10m`, {
      flag,
    });
  const bytes = Math.floor(Number(match[1]) * (factor[(match[2] ?? '').toLowerCase()] ?? 1));
  if (!(bytes >= minLogSizeMax && bytes <= maxLogSizeMax))
    throw new InvalidArgumentError(`Invalid --${flag} "${text}": the log size cap must be from 8k to 16g`, {
      flag,
      min: minLogSizeMax,
      max: maxLogSizeMax,
    });
  return bytes;
}

/** A cap given as a number of bytes (a prepare option): within the bounds, or a clear error. */
export function checkLogSizeMax(bytes: number, field = 'logSizeMax'): number {
  if (!Number.isSafeInteger(bytes) || bytes < minLogSizeMax || bytes > maxLogSizeMax)
    throw new InvalidArgumentError(
      `Invalid ${field} ${bytes}: the log size cap must be from 8k (${minLogSizeMax}) to 16g (${maxLogSizeMax}) bytes`,
      { field, min: minLogSizeMax, max: maxLogSizeMax },
    );
  return bytes;
}

/**
 * Appends the app's output to a pod's log as records (pod-log-format.ts: each line with the time it
 * was read from the app's pipe and its stream) and rotates it at the cap. Synchronous writes to a
 * local file: the app's pipes are read by the event loop, and a write stream would start libuv's
 * thread pool on the path of every run. Rotation falls between records, so every file starts
 * with one and none passes the cap.
 */
export class RotatingLogWriter {
  readonly #dir: string;
  readonly #maxBytes: number;
  readonly #maxContent: number;
  #fd: number;
  #size: number;
  #dropped = false;

  constructor(podDir: string, maxBytes: number = defaultLogSizeMax) {
    this.#dir = podDir;
    this.#maxBytes = maxBytes;
    // A record is at most half the cap, so one always fits in a fresh file.
    this.#maxContent = Math.min(maxRecordContent, Math.floor(maxBytes / 2));
    this.#fd = openSync(this.#path(logFileNames.current), 'a');
    this.#size = fstatSync(this.#fd).size;
  }

  /** What the app wrote to `stream`, read at `time`: one write per file it lands in. */
  write(stream: LogStream, chunk: Uint8Array, time: Date = new Date()): void {
    const bytes = encodeLogRecords(stream, chunk, time, this.#maxContent);
    for (let from = 0; from < bytes.length; ) {
      // The records that still fit in this file (each ends with the only newline it holds).
      const room = this.#maxBytes - this.#size;
      let to = bytes.length - from <= room ? bytes.length : bytes.lastIndexOf(newline, from + room - 1) + 1;
      if (to <= from) {
        if (this.#size > 0) {
          this.#rotate();
          continue;
        }
        // A fresh file takes at least one record (a record is at most half the cap, see above).
        to = bytes.indexOf(newline, from) + 1;
      }
      for (let offset = from; offset < to; ) offset += writeSync(this.#fd, bytes, offset, to - offset);
      this.#size += to - from;
      from = to;
    }
  }

  close(): void {
    closeSync(this.#fd);
  }

  /**
   * `log` → `log.1`, then a new `log`. A reader following the log holds the old file open and
   * finds its successor by name (pod-log-reader.ts), so it never reads a byte twice.
   */
  #rotate(): void {
    // The rename below replaces an older log.1, if there is one: its output is gone from then on.
    if (!this.#dropped && existsSync(this.#path(logFileNames.rotated))) {
      closeSync(openSync(this.#path(logDroppedMarker), 'a'));
      this.#dropped = true;
    }
    renameSync(this.#path(logFileNames.current), this.#path(logFileNames.rotated));
    closeSync(this.#fd);
    this.#fd = openSync(this.#path(logFileNames.current), 'a');
    this.#size = 0;
  }

  #path(name: string): string {
    return `${this.#dir}/${name}`;
  }
}
