import { createHash } from 'node:crypto';
import { open } from 'node:fs/promises';
import { join, posix } from 'node:path';
import { pipeline } from 'node:stream/promises';
import tar from 'tar-stream';
import { InvalidArgumentError } from '../../core/index.js';
import { openUncompressed } from './compression.js';
import { sha256Digest } from './digest.js';
import type { ImageSource, SourceFile } from './image-source.js';
import { archivePathComponents } from './in-root-path.js';
import { entryChunks } from './layer-extractor.js';

const maxAliasHops = 40;

/**
 * An image archive (docker-archive or oci-archive, plain or gzip) unpacked into a private work
 * dir. Entries are never written under their own names: each regular file becomes `f<N>`, hashed
 * while written, and the archive's paths live only in a map. So the outer archive cannot write
 * anywhere by construction; its symlinks and hardlinks (docker save links repeated layers) are
 * aliases inside that map.
 */
export class StagedArchive implements ImageSource {
  readonly #files = new Map<string, SourceFile>();
  readonly #aliases = new Map<string, string>();

  private constructor(readonly description: string) {}

  static async stage(archive: string, workDir: string): Promise<StagedArchive> {
    const staged = new StagedArchive(archive);
    const what = `"${archive}"`;
    const extract = tar.extract();
    const feeding = pipeline(await openUncompressed(archive, what), extract);
    feeding.catch(() => undefined);
    let count = 0;
    try {
      for await (const entry of extract) {
        const { name, type, linkname } = entry.header;
        const components = archivePathComponents(name);
        if (components === null) {
          throw new InvalidArgumentError(
            `Cannot import ${what}: entry "${name}" climbs out of the archive with ".."`,
            { entry: name },
          );
        }
        const path = components.join('/');
        if (type === 'file' || type === 'contiguous-file' || type === undefined || type === null) {
          count += 1;
          staged.#files.set(path, await writeHashing(entryChunks(entry), join(workDir, `f${count}`)));
          staged.#aliases.delete(path);
          continue;
        }
        for await (const _ of entryChunks(entry)) {
          // only regular files and links mean anything in an image archive
        }
        if (type === 'symlink' || type === 'link') {
          const base = type === 'symlink' ? posix.dirname(path) : '';
          const target = archivePathComponents(posix.join(base, linkname ?? ''));
          if (target === null || (linkname ?? '').startsWith('/')) {
            throw new InvalidArgumentError(
              `Cannot import ${what}: entry "${name}" links to "${linkname}", outside the archive`,
              { entry: name },
            );
          }
          staged.#aliases.set(path, target.join('/'));
          staged.#files.delete(path);
        }
      }
      await feeding;
    } catch (err) {
      throw describeArchiveError(err, what);
    }
    if (count === 0) throw new InvalidArgumentError(`Cannot import ${what}: the archive holds no files`);
    return staged;
  }

  #lookup(path: string): SourceFile | undefined {
    let key = archivePathComponents(path)?.join('/') ?? '';
    for (let hop = 0; hop <= maxAliasHops; hop++) {
      const file = this.#files.get(key);
      if (file !== undefined) return file;
      const next = this.#aliases.get(key);
      if (next === undefined) return undefined;
      key = next;
    }
    return undefined;
  }

  has(path: string): boolean {
    return this.#lookup(path) !== undefined;
  }

  async file(path: string): Promise<SourceFile> {
    const file = this.#lookup(path);
    if (file === undefined) {
      throw new InvalidArgumentError(
        `Cannot import "${this.description}": the archive has no file "${path}"`,
        {
          path,
        },
      );
    }
    return file;
  }
}

async function writeHashing(entry: AsyncIterable<Buffer>, path: string): Promise<SourceFile> {
  const hash = createHash('sha256');
  const handle = await open(path, 'wx', 0o600);
  let size = 0;
  try {
    for await (const chunk of entry) {
      hash.update(chunk);
      size += chunk.length;
      await handle.write(chunk);
    }
    // Staged files may be renamed straight into the blob store: make them durable first.
    await handle.sync();
  } finally {
    await handle.close();
  }
  return { path, size, digest: sha256Digest(hash.digest('hex')), staged: true };
}

/** Turns tar-stream's and zlib's terse errors into a sentence about the user's file. */
function describeArchiveError(err: unknown, what: string): unknown {
  if (err instanceof InvalidArgumentError) return err;
  const message = err instanceof Error ? err.message : String(err);
  if (
    /Invalid tar header|Unexpected end of data|unexpected end of file|incorrect header check|invalid/i.test(
      message,
    )
  ) {
    const reason = /end of (data|file)/i.test(message)
      ? 'the archive is truncated'
      : 'it is not a tar archive (plain or gzip)';
    return new InvalidArgumentError(`Cannot import ${what}: ${reason} (${message})`);
  }
  return err;
}
