import { lstatSync, mkdirSync } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import tar from 'tar-stream';
import { taskOutputLimits } from '../bbs/index.js';
import { BerthError, errnoCode } from '../core/index.js';

/** What an extraction wrote, relative to its directory, in archive order. */
export interface ExtractedOutputs {
  readonly files: readonly string[];
  readonly directories: readonly string[];
  readonly bytes: number;
}

export interface ExtractLimits {
  readonly maxBytes: number;
  readonly maxEntries: number;
}

/** Refused archive content: nothing at or past the entry is written. */
export class UnsafeArchiveError extends BerthError {
  constructor(message: string, details: Record<string, unknown> = {}) {
    super('invalid_argument', message, details);
    this.name = 'UnsafeArchiveError';
  }
}

/**
 * Unpacks a task's outputs archive (tar+gzip) into `dest`, trusting nothing in it: only regular
 * files and directories, every name relative with no `..` (an entry that would land outside
 * `dest` is refused, not cleaned up into somewhere else), no existing file overwritten and no
 * existing symlink followed (files are created O_EXCL; a directory on the way that exists must be
 * a real directory), and no more bytes or entries than a task may ever leave (a gzip bomb stops
 * there). Modes keep only the permission bits. Ownership is not restored.
 */
export async function extractOutputs(
  archive: Readable,
  dest: string,
  limits: ExtractLimits = { maxBytes: taskOutputLimits.maxBytes, maxEntries: taskOutputLimits.maxEntries },
): Promise<ExtractedOutputs> {
  mkdirSync(dest, { recursive: true });
  const files: string[] = [];
  const directories: string[] = [];
  let bytes = 0;
  let entries = 0;
  const extract = tar.extract();
  extract.on('entry', (header, stream, next) => {
    // A refused entry fails the extraction (`next(err)`), which destroys this entry's stream with
    // the same error: that error is the extraction's, reported once by the pipeline below.
    stream.on('error', () => {});
    const write = async (): Promise<void> => {
      entries += 1;
      if (entries > limits.maxEntries)
        throw new UnsafeArchiveError(`The archive has more than ${limits.maxEntries} entries`);
      const parts = safeParts(header.name);
      if (header.type === 'directory') {
        ensureDirs(dest, parts);
        directories.push(parts.join('/'));
        stream.resume();
        return;
      }
      if (header.type !== 'file') {
        throw new UnsafeArchiveError(
          `Refusing "${header.name}" in the archive: a ${header.type ?? 'special'} entry; outputs are regular files and directories`,
          { entry: header.name, type: header.type },
        );
      }
      bytes += header.size ?? 0;
      if (bytes > limits.maxBytes)
        throw new UnsafeArchiveError(`The archive unpacks to more than ${limits.maxBytes} bytes`);
      ensureDirs(dest, parts.slice(0, -1));
      const target = join(dest, ...parts);
      // Opened before the entry is read: a refusal here is ours to report, not the tar stream's.
      let file: FileHandle;
      try {
        file = await open(target, 'wx', (header.mode ?? 0o644) & 0o777);
      } catch (err) {
        if (errnoCode(err) === 'EEXIST') {
          throw new BerthError(
            'already_exists',
            `Cannot write ${target}: it exists already (choose another -o DIR)`,
            {
              path: target,
            },
          );
        }
        throw err;
      }
      await pipeline(stream, file.createWriteStream());
      files.push(parts.join('/'));
    };
    write().then(
      () => next(),
      (err: unknown) => next(err instanceof Error ? err : new Error(String(err))),
    );
  });
  await pipeline(archive, createGunzip(), extract);
  return { files, directories, bytes };
}

/** An entry's name as path components, or a refusal: absolute, `..`, NUL, or nothing at all. */
function safeParts(name: string): string[] {
  const parts = name.split('/').filter((p) => p !== '' && p !== '.');
  if (name.startsWith('/') || name.includes('\0') || parts.length === 0 || parts.includes('..')) {
    throw new UnsafeArchiveError(
      `Refusing "${name}" in the archive: it would land outside the output directory`,
      {
        entry: name,
      },
    );
  }
  return parts;
}

/** Creates `parts` under `dest` one by one; an existing one must be a directory, never a symlink. */
function ensureDirs(dest: string, parts: readonly string[]): void {
  let path = dest;
  for (const part of parts) {
    path = join(path, part);
    try {
      mkdirSync(path, { mode: 0o755 });
      continue;
    } catch (err) {
      if (errnoCode(err) !== 'EEXIST') throw err;
    }
    if (!lstatSync(path).isDirectory()) {
      throw new UnsafeArchiveError(`Cannot unpack into ${path}: it exists and is not a directory`, { path });
    }
  }
}
