import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createReadStream, createWriteStream, existsSync } from 'node:fs';
import { mkdir, open, rename, rm, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { finished } from 'node:stream/promises';
import { InvalidArgumentError } from '../../core/index.js';
import { type DigestAlgorithm, digestAlgorithm, sha256Digest } from './digest.js';
import type { SourceFile } from './image-source.js';
import { tempName, writeStoreFile } from './store-files.js';
import type { StoreLayout } from './store-layout.js';

export interface StoredBlob {
  readonly digest: string;
  readonly size: number;
}

export class DigestMismatchError extends InvalidArgumentError {
  constructor(what: string, expected: string, actual: string) {
    super(`${what} has digest ${actual}, not the ${expected} its manifest names`, { expected, actual });
  }
}

/**
 * Content-addressed blobs in `blobs/<algorithm>/<hex>`. A blob is only ever created by renaming a
 * complete, fsynced, verified temp file from `tmp/`, so a blob file's name is always its digest.
 * Writers of the same digest race harmlessly: both renames install identical bytes.
 */
export class BlobStore {
  constructor(private readonly layout: StoreLayout) {}

  path(digest: string): string {
    return this.layout.blob(digest);
  }

  has(digest: string): boolean {
    return existsSync(this.layout.blob(digest));
  }

  /**
   * Puts a source file into the store, verifying it against `expected` (a manifest's digest and
   * size) when given. A staged file is renamed in; a user's file is copied and hashed on the way.
   */
  async ingest(
    file: SourceFile,
    what: string,
    expected?: { readonly digest: string; readonly size?: number },
  ): Promise<StoredBlob> {
    let tmp: string | undefined;
    try {
      return await this.#ingestVia(file, what, expected, (path) => {
        tmp = path;
      });
    } catch (err) {
      // A refused or failed copy must not leave its temp file behind.
      if (tmp !== undefined) await rm(tmp, { force: true });
      throw err;
    }
  }

  async #ingestVia(
    file: SourceFile,
    what: string,
    expected: { readonly digest: string; readonly size?: number } | undefined,
    onTemp: (path: string) => void,
  ): Promise<StoredBlob> {
    let digest = file.digest;
    let size = file.size;
    let tmp: string | undefined;
    if (expected !== undefined && this.has(expected.digest) && !file.staged) {
      // Already verified when it was written; copying the user's file again proves nothing new.
      digest = expected.digest;
      size = (await stat(this.path(digest))).size;
    } else if (digest === undefined) {
      tmp = tempName(this.layout, 'blob');
      onTemp(tmp);
      const algorithm = expected === undefined ? 'sha256' : digestAlgorithm(expected.digest);
      ({ digest, size } = await copyHashing(file.path, tmp, algorithm));
    }
    if (expected !== undefined) {
      if (digest !== expected.digest) throw new DigestMismatchError(what, expected.digest, digest);
      if (expected.size !== undefined && expected.size !== size) {
        throw new InvalidArgumentError(
          `${what} is ${size} bytes, not the ${expected.size} its manifest names`,
          { digest, size, expected: expected.size },
        );
      }
    }
    const target = this.path(digest);
    await mkdir(dirname(target), { recursive: true, mode: 0o755 });
    if (tmp !== undefined) {
      await rename(tmp, target);
    } else if (file.staged) {
      await rename(file.path, target);
      file.path = target;
    }
    return { digest, size };
  }

  /** Writes bytes the store made itself (a synthesized manifest, an import-rootfs config). */
  async write(data: Uint8Array): Promise<StoredBlob> {
    const digest = sha256Digest(createHash('sha256').update(data).digest('hex'));
    if (!this.has(digest)) {
      await writeStoreFile(this.layout, this.path(digest), data);
    }
    return { digest, size: data.length };
  }
}

/** Copies `from` to a new file `to`, hashing on the way; fsyncs so a rename after it is durable. */
export async function copyHashing(
  from: string,
  to: string,
  algorithm: DigestAlgorithm = 'sha256',
): Promise<StoredBlob> {
  const hash = createHash(algorithm);
  const handle = await open(to, 'wx', 0o644);
  let size = 0;
  try {
    for await (const chunk of createReadStream(from)) {
      const bytes = chunk as Buffer;
      hash.update(bytes);
      size += bytes.length;
      await handle.write(bytes);
    }
    await handle.sync();
  } finally {
    await handle.close();
  }
  return { digest: `${algorithm}:${hash.digest('hex')}`, size };
}

/**
 * Writes a stream to a new file `to`, hashing on the way (unless `algorithm` is `verified`: the
 * caller's stream fails unless its bytes hash to the digest it was asked for, so hashing again
 * would only cost a second pass); fsyncs so a rename after it is durable. Used for blobs fetched
 * from a registry, which are verified before they enter the store. A write stream's buffer lets
 * the network keep reading while the disk writes.
 */
export async function writeStreamHashing(
  source: AsyncIterable<Uint8Array>,
  to: string,
  algorithm: DigestAlgorithm | 'verified' = 'sha256',
): Promise<{ readonly digest?: string; readonly size: number }> {
  const hash = algorithm === 'verified' ? undefined : createHash(algorithm);
  const out = createWriteStream(to, { flags: 'wx', mode: 0o644, highWaterMark: 4 * 1024 * 1024 });
  let size = 0;
  try {
    for await (const chunk of source) {
      hash?.update(chunk);
      size += chunk.length;
      if (!out.write(chunk)) await once(out, 'drain');
    }
    out.end();
    await finished(out);
  } catch (err) {
    out.destroy();
    throw err;
  }
  const handle = await open(to, 'r+');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
  return { size, ...(hash === undefined ? {} : { digest: `${algorithm}:${hash.digest('hex')}` }) };
}
