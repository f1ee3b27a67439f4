import { createHash } from 'node:crypto';
import { closeSync, createWriteStream, fstatSync, type Stats } from 'node:fs';
import { rm } from 'node:fs/promises';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import tar from 'tar-stream';
import type { TaskOutputDeclaration } from '../bbs/index.js';
import { BerthError } from '../core/index.js';
import { addTarEntry, LayeredRoot, type RootEntry } from '../runtime/index.js';

export interface OutputCollectionLimits {
  /** Bytes of file content, all outputs together. */
  readonly maxBytes: number;
  /** Files and directories, all outputs together. */
  readonly maxEntries: number;
}

/** A collected archive: where it is, and what the server checks it against. */
export interface CollectedOutputs {
  readonly archive: string;
  readonly size: number;
  readonly sha256: string;
  /** Bytes of file content archived. */
  readonly contentBytes: number;
  readonly entries: number;
}

/**
 * Why outputs could not be collected, naming the output and the cause: it becomes the task's
 * failure_reason (DESIGN.md: finalization fails with a reason).
 */
export class OutputCollectionError extends BerthError {
  constructor(message: string, details: Record<string, unknown> = {}) {
    super('invalid_argument', message, details);
    this.name = 'OutputCollectionError';
  }
}

type DirEntry = RootEntry & { readonly kind: 'dir' };
type FileEntry = RootEntry & { readonly kind: 'other' };

/**
 * Archives a finished container's declared outputs (tar+gzip) from its root as the container saw
 * it (`layers`: the pod's upper dir over the image's rootfs, top first). Every lookup goes
 * through LayeredRoot: one component at a time through O_PATH|O_NOFOLLOW fds, so no host
 * symlink is followed and the walk never leaves the container's root. Symlinks on the way *to* a
 * declared path resolve inside the root, as the container resolved them; a symlink that *is* an
 * output, or sits in an output directory, is refused, never read nor archived (a task that links
 * `/out/key` to `/etc/shadow` gets a failure naming the link, not anybody's shadow file).
 * Devices, fifos and sockets are refused too. Over `maxBytes` of content or `maxEntries` entries,
 * collection stops and fails; so does a missing path. On failure no archive is left behind.
 */
export async function collectTaskOutputs(
  layers: readonly string[],
  outputs: readonly TaskOutputDeclaration[],
  limits: OutputCollectionLimits,
  archive: string,
): Promise<CollectedOutputs> {
  const root = LayeredRoot.open(layers);
  const pack = tar.pack();
  const hash = createHash('sha256');
  let size = 0;
  const hasher = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      hash.update(chunk);
      size += chunk.length;
      done(null, chunk);
    },
  });
  const writing = pipeline(pack, createGzip(), hasher, createWriteStream(archive, { mode: 0o600 }));
  // catch-all: awaited below; this only keeps an early failure from being unhandled meanwhile.
  writing.catch(() => undefined);
  const walk = new OutputWalk(root, pack, limits);
  try {
    for (const output of outputs) await walk.output(output);
    pack.finalize();
    await writing;
  } catch (err) {
    pack.destroy();
    // catch-all: the stream's own error is the one above, or it ended because we destroyed it.
    await writing.catch(() => undefined);
    await rm(archive, { force: true });
    throw err;
  } finally {
    root.close();
  }
  return {
    archive,
    size,
    sha256: hash.digest('hex'),
    contentBytes: walk.bytes,
    entries: walk.entries,
  };
}

/** One collection's walk: the running totals it checks against the limits. */
class OutputWalk {
  bytes = 0;
  entries = 0;

  readonly #root: LayeredRoot;
  readonly #pack: tar.Pack;
  readonly #limits: OutputCollectionLimits;

  constructor(root: LayeredRoot, pack: tar.Pack, limits: OutputCollectionLimits) {
    this.#root = root;
    this.#pack = pack;
    this.#limits = limits;
  }

  async output(output: TaskOutputDeclaration): Promise<void> {
    const entry = this.#root.entryAt(output.path);
    try {
      await this.add(output, entry, output.name, output.path);
    } finally {
      this.#root.release(entry);
    }
  }

  async add(output: TaskOutputDeclaration, entry: RootEntry, name: string, path: string): Promise<void> {
    const fail = (why: string, details: Record<string, unknown> = {}) =>
      new OutputCollectionError(`Cannot collect output "${output.name}" (${output.path}): ${why}`, {
        output: output.name,
        path,
        ...details,
      });
    this.entries += 1;
    if (this.entries > this.#limits.maxEntries) {
      throw fail(`more than ${this.#limits.maxEntries} files and directories in the task's outputs`, {
        limit: this.#limits.maxEntries,
      });
    }
    switch (entry.kind) {
      case 'missing':
        throw fail(path === output.path ? 'no such file or directory' : `${path} vanished`);
      case 'symlink':
        throw fail(`${path} is a symbolic link (to ${entry.target}); links are refused, not followed`, {
          target: entry.target,
        });
      case 'dir':
        await this.directory(output, entry, name, path);
        return;
      case 'other':
        await this.file(entry, name, path, fail);
        return;
    }
  }

  async directory(output: TaskOutputDeclaration, dir: DirEntry, name: string, path: string): Promise<void> {
    const stat = fstatSync(dir.fds[0] as number);
    await addTarEntry(this.#pack, { name: `${name}/`, type: 'directory', ...headerOf(stat) });
    for (const child of this.#root.names(dir)) {
      const entry = this.#root.child(dir, child);
      try {
        // A name a whiteout or an upper file hides reads as missing: the container saw nothing there.
        if (entry.kind === 'missing') continue;
        await this.add(output, entry, `${name}/${child}`, `${path.replace(/\/+$/, '')}/${child}`);
      } finally {
        this.#root.release(entry);
      }
    }
  }

  async file(
    entry: FileEntry,
    name: string,
    path: string,
    fail: (why: string, details?: Record<string, unknown>) => OutputCollectionError,
  ): Promise<void> {
    const fd = this.#root.openEntry(entry);
    if (fd === undefined) throw fail(`${path} is not a regular file or directory`);
    let handedOver = false;
    try {
      const stat = fstatSync(fd);
      this.bytes += stat.size;
      if (this.bytes > this.#limits.maxBytes) {
        throw fail(
          `the task's outputs exceed their limit of ${this.#limits.maxBytes} bytes (${this.bytes} bytes so far)`,
          { limit: this.#limits.maxBytes },
        );
      }
      handedOver = true;
      await addTarEntry(this.#pack, { name, type: 'file', size: stat.size, ...headerOf(stat) }, fd);
    } finally {
      if (!handedOver) closeSync(fd);
    }
  }
}

function headerOf(stat: Stats): { mode: number; mtime: Date } {
  return { mode: stat.mode & 0o7777, mtime: stat.mtime };
}
