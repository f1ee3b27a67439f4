import { lstat, mkdir, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import { errnoCode } from '../../core/index.js';

/** Linux's own limit on symlinks followed in one lookup (MAXSYMLINKS). */
const maxSymlinks = 40;

/**
 * Lexically cleans a path from an archive ("./usr//bin/", "/etc/passwd", "a/../b") into its
 * components relative to the root. Returns null when `..` climbs above the root: such an entry
 * is refused, never clamped, because no honest image builder writes one.
 */
export function archivePathComponents(name: string): string[] | null {
  const out: string[] = [];
  for (const part of name.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') {
      if (out.length === 0) return null;
      out.pop();
      continue;
    }
    out.push(part);
  }
  return out;
}

export class NotADirectoryInRootError extends Error {
  constructor(readonly path: string) {
    super(`"/${path}" is not a directory`);
  }
}

export class SymlinkLoopInRootError extends Error {
  constructor(readonly path: string) {
    super(`too many levels of symbolic links at "/${path}"`);
  }
}

/**
 * Resolves directory paths inside a root filesystem *as if the root were `/`* (what securejoin
 * and openat2's RESOLVE_IN_ROOT do): a symlink met on the way is followed, but an absolute target
 * restarts at the root and `..` stops at the root, so no lookup ever leaves it. The extractor
 * resolves each entry's parent with it, so an entry written "through" `evil -> /` lands in the
 * root's own `etc/`, not the host's. lstat-based walking is race-free here because the root is a
 * private staging directory with a single writer: this process.
 */
export class InRootResolver {
  /** Resolved relative paths known to be real directories; dropped when something is replaced. */
  readonly #knownDirs = new Set<string>();

  constructor(readonly root: string) {}

  /**
   * Returns the real components of directory `components` within the root. Missing directories
   * are created (mode 0755, as docker does for implied parents) when `create` is set, reported
   * through `onCreate`; otherwise a missing one yields undefined.
   */
  async resolveDir(
    components: readonly string[],
    create: boolean,
    onCreate?: (rel: readonly string[]) => void,
  ): Promise<string[] | undefined> {
    const resolved: string[] = [];
    const pending = [...components];
    let links = 0;
    while (pending.length > 0) {
      const part = pending.shift() as string;
      if (part === '' || part === '.') continue;
      if (part === '..') {
        resolved.pop();
        continue;
      }
      const rel = [...resolved, part];
      const key = rel.join('/');
      if (this.#knownDirs.has(key)) {
        resolved.push(part);
        continue;
      }
      const abs = join(this.root, ...rel);
      const stat = await lstat(abs).catch((err: unknown) => {
        if (errnoCode(err) === 'ENOENT') return undefined;
        throw err;
      });
      if (stat === undefined) {
        if (!create) return undefined;
        await mkdir(abs, { mode: 0o755 });
        onCreate?.(rel);
      } else if (stat.isSymbolicLink()) {
        links += 1;
        if (links > maxSymlinks) throw new SymlinkLoopInRootError(key);
        const target = await readlink(abs);
        if (target.startsWith('/')) resolved.length = 0;
        pending.unshift(...target.split('/'));
        continue;
      } else if (!stat.isDirectory()) {
        throw new NotADirectoryInRootError(key);
      }
      this.#knownDirs.add(key);
      resolved.push(part);
    }
    return resolved;
  }

  /** Records a directory this process just made at `rel`. */
  remember(rel: readonly string[]): void {
    this.#knownDirs.add(rel.join('/'));
  }

  /** Drops what is known about `rel` and everything below it, after it was removed or replaced. */
  forget(rel: readonly string[]): void {
    const key = rel.join('/');
    for (const known of this.#knownDirs) {
      if (known === key || known.startsWith(`${key}/`)) this.#knownDirs.delete(known);
    }
  }
}
