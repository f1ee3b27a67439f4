import { createHash, type Hash, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createReadStream, createWriteStream } from 'node:fs';
import { open, readdir, rm, stat, truncate } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { errnoCode } from '../core/index.js';
import {
  type DigestAlgorithm,
  digestAlgorithm,
  type HashedFile,
  type UncompressedDigester,
  uncompressedDigester,
} from '../runtime/image/index.js';
import { forEachChunk } from './body-chunks.js';
import { EarlyWriteback } from './early-writeback.js';
import { RegistryError } from './registry-errors.js';

interface Session {
  /** sha256 of the file's bytes so far; undefined after a failed write (rehashed at the end). */
  hash: Hash | undefined;
  hashedBytes: number;
  /** The blob's uncompressed digest being computed (gzip uploads seen from byte 0 only). */
  inflated: UncompressedDigester | undefined;
  /** Serializes the requests of one upload: chunks must land in order. */
  queue: Promise<unknown>;
}

/** How much of an upload may sit in memory waiting for the disk before the socket is paused. */
const writeBufferBytes = 4 * 1024 * 1024;

const idPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * Blob uploads of the registry: one file per upload in the store's `uploads/` (so the finished
 * blob is renamed into `blobs/`, never copied). The file is the truth; the running hash is kept in
 * memory only to avoid reading 100 MiB twice, and is rebuilt from the file after a server restart
 * or a broken chunk, so an upload resumes from whatever offset the file has. Uploads idle longer
 * than `idleTtlMs` are deleted by `sweep`.
 */
export class UploadSessions {
  readonly #sessions = new Map<string, Session>();

  readonly #dir: string;

  constructor(
    dir: string,
    readonly idleTtlMs: number,
  ) {
    this.#dir = dir;
  }

  async create(): Promise<string> {
    const id = randomUUID();
    const handle = await open(this.#path(id), 'wx', 0o600);
    await handle.close();
    this.#sessions.set(id, {
      hash: createHash('sha256'),
      hashedBytes: 0,
      inflated: undefined,
      queue: Promise.resolve(),
    });
    return id;
  }

  /** Bytes received so far; BLOB_UPLOAD_UNKNOWN if there is no such upload. */
  async size(id: string): Promise<number> {
    const info = await stat(this.#path(id)).catch((err: unknown) => {
      if (errnoCode(err) === 'ENOENT') throw unknownUpload(id);
      throw err;
    });
    return info.size;
  }

  /**
   * Appends a chunk. With `range` (the request's Content-Range), the chunk must start where the
   * upload ends, else 416 with the current Range, as the spec says for out-of-order chunks.
   */
  append(
    id: string,
    body: Readable,
    range?: { readonly start: number; readonly end: number },
  ): Promise<number> {
    return this.#serialized(id, async (session) => {
      const start = await this.size(id);
      if (range !== undefined && range.start !== start) throw outOfOrder(id, start, range.start);
      const written = await this.#write(id, session, body, start);
      if (range !== undefined && range.end - range.start + 1 !== written) {
        await truncate(this.#path(id), start);
        session.hash = undefined;
        this.#dropInflated(session);
        throw new RegistryError(
          'BLOB_UPLOAD_INVALID',
          `Content-Range says ${range.end - range.start + 1} bytes, the body had ${written}`,
          { range },
        );
      }
      return start + written;
    });
  }

  /**
   * Appends the last chunk (if any), then checks the whole upload against `digest`. On a
   * mismatch the upload is deleted (nothing of it stays). On success the caller moves the file
   * into the store and then calls `forget`.
   */
  finish(
    id: string,
    digest: string,
    body: Readable | undefined,
    range?: { readonly start: number; readonly end: number },
  ): Promise<HashedFile> {
    return this.#serialized(id, async (session) => {
      const start = await this.size(id);
      // The final chunk obeys the same rule as a PATCH: it must start where the upload ends.
      if (range !== undefined && range.start !== start) throw outOfOrder(id, start, range.start);
      if (body !== undefined) await this.#write(id, session, body, start);
      const path = this.#path(id);
      const size = await this.size(id);
      const handle = await open(path, 'r+');
      let diffId: string | undefined;
      try {
        // The fsync and the last of the inflating overlap: both only wait on other threads.
        [, diffId] = await Promise.all([
          handle.sync(),
          session.inflated !== undefined && session.hashedBytes === size
            ? session.inflated.digest()
            : undefined,
        ]);
      } finally {
        await handle.close();
      }
      session.inflated = undefined;
      // The running hash is sha256; an upload completed under another algorithm is hashed again.
      const algorithm = digestAlgorithm(digest);
      let hex: string;
      if (algorithm === 'sha256' && session.hash !== undefined && session.hashedBytes === size) {
        hex = session.hash.digest('hex');
      } else hex = await hashFile(path, algorithm);
      session.hash = undefined;
      const actual = `${algorithm}:${hex}`;
      if (actual !== digest) {
        await this.cancel(id);
        throw new RegistryError(
          'DIGEST_INVALID',
          `the uploaded content has digest ${actual}, not ${digest}`,
          { expected: digest, actual },
        );
      }
      return { path, digest: actual, size, ...(diffId === undefined ? {} : { diffId }) };
    });
  }

  async cancel(id: string): Promise<void> {
    const session = this.#sessions.get(id);
    if (session !== undefined) this.#dropInflated(session);
    this.#sessions.delete(id);
    await rm(this.#path(id), { force: true });
  }

  forget(id: string): void {
    this.#sessions.delete(id);
  }

  /** Deletes uploads idle for longer than the TTL (a client that gave up); returns how many. */
  async sweep(now = Date.now()): Promise<number> {
    let removed = 0;
    for (const name of await readdir(this.#dir).catch(() => [] as string[])) {
      const path = join(this.#dir, name);
      const info = await stat(path).catch(() => undefined);
      if (info === undefined || now - info.mtimeMs <= this.idleTtlMs) continue;
      this.#sessions.delete(name);
      await rm(path, { recursive: true, force: true });
      removed += 1;
    }
    return removed;
  }

  #path(id: string): string {
    if (!idPattern.test(id)) throw unknownUpload(id);
    return join(this.#dir, id);
  }

  /**
   * Streams a chunk into the upload's file through a write stream (its buffer lets the socket
   * keep reading while the disk writes, and it writes what piled up with one writev), hashing
   * each piece once on the way and, for a gzip blob seen from its first byte, inflating it on
   * the thread pool for its diff_id.
   */
  async #write(id: string, session: Session, body: Readable, start: number): Promise<number> {
    if (session.hash !== undefined && session.hashedBytes !== start) session.hash = undefined;
    if (session.inflated !== undefined && session.hashedBytes !== start) this.#dropInflated(session);
    const out = createWriteStream(this.#path(id), { flags: 'a', highWaterMark: writeBufferBytes });
    const writeback = new EarlyWriteback(this.#path(id));
    let written = 0;
    // Returns a promise only when the disk or the inflater needs the body paused: most pieces
    // are handled without one (see forEachChunk).
    const take = (chunk: Buffer): Promise<void> | undefined => {
      session.hash?.update(chunk);
      const inflating = session.inflated?.write(chunk);
      written += chunk.length;
      session.hashedBytes = start + written;
      const draining = out.write(chunk) ? undefined : once(out, 'drain');
      writeback.wrote(chunk.length);
      if (inflating === undefined && draining === undefined) return undefined;
      return Promise.all([inflating, draining]).then(() => undefined);
    };
    try {
      await forEachChunk(body, (chunk) => {
        if (start + written === 0 && session.hash !== undefined) {
          return uncompressedDigester(chunk).then((inflated) => {
            session.inflated = inflated;
            return take(chunk);
          });
        }
        return take(chunk);
      });
      out.end();
      await finished(out);
      await writeback.close();
    } catch (err) {
      await writeback.close();
      // The file keeps what arrived (the client may resume from there); the hash is rebuilt.
      session.hash = undefined;
      this.#dropInflated(session);
      out.destroy();
      // catch-all: the stream's own failure is already `err` or follows from it; `err` is thrown.
      await finished(out).catch(() => undefined);
      throw err;
    }
    return written;
  }

  #dropInflated(session: Session): void {
    session.inflated?.abandon();
    session.inflated = undefined;
  }

  #serialized<T>(id: string, fn: (session: Session) => Promise<T>): Promise<T> {
    let session = this.#sessions.get(id);
    if (session === undefined) {
      // Known on disk but not in memory (server restarted): continue without a running hash.
      session = { hash: undefined, hashedBytes: 0, inflated: undefined, queue: Promise.resolve() };
      this.#sessions.set(id, session);
    }
    const own = session;
    const run = own.queue.then(() => fn(own));
    own.queue = run.catch(() => undefined);
    return run;
  }
}

export function rangeHeader(size: number): string {
  return `0-${size > 0 ? size - 1 : 0}`;
}

/** 416 with the upload's current Range, as the spec answers a chunk that leaves a gap or overlaps. */
function outOfOrder(id: string, size: number, start: number): RegistryError {
  return new RegistryError(
    'BLOB_UPLOAD_INVALID',
    `the chunk starts at byte ${start}, but the upload has ${size} bytes`,
    { expected: size, got: start },
    { status: 416, headers: { Range: rangeHeader(size), 'Docker-Upload-UUID': id } },
  );
}

function unknownUpload(id: string): RegistryError {
  return new RegistryError('BLOB_UPLOAD_UNKNOWN', `there is no upload ${id}`, { uuid: id });
}

async function hashFile(path: string, algorithm: DigestAlgorithm): Promise<string> {
  const hash = createHash(algorithm);
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}
