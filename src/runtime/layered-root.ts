import { closeSync, constants, fstatSync, openSync, readdirSync, readlinkSync, readSync } from 'node:fs';
import { errnoCode } from '../core/index.js';
import { nativeAddon } from './native-addon.js';

/** Linux's own limit on symlinks followed in one lookup (MAXSYMLINKS). */
const maxSymlinks = 40;
/** open(2)'s O_PATH (the same value on x86-64 and arm64); node's fs.constants lacks it. */
const O_PATH = 0o10000000;
// libuv adds O_CLOEXEC to every open.
const lookupFlags = O_PATH | constants.O_NOFOLLOW;

/**
 * How overlayfs marks a directory of an upper layer that hides every lower one (its own xattr
 * namespace is `trusted.`, as berth mounts the root overlay without `userxattr`).
 */
const opaqueXattr = 'trusted.overlay.opaque';

/** The path of an open fd, for the *at-style calls node has no binding for. */
function fdPath(fd: number, name?: string): string {
  return name === undefined ? `/proc/self/fd/${fd}` : `/proc/self/fd/${fd}/${name}`;
}

/** What a name is in the merged root (O_PATH fds, owned by the LayeredRoot until `release`). */
export type RootEntry =
  | { readonly kind: 'missing' }
  | { readonly kind: 'symlink'; readonly target: string }
  /** The directory in every layer that makes up the merged one, top first. */
  | { readonly kind: 'dir'; readonly fds: readonly number[] }
  | { readonly kind: 'other'; readonly fd: number; readonly isFile: boolean };

type Entry = RootEntry;

/**
 * Looks files up in a container's root as overlayfs shows it to the container, from the host,
 * without ever leaving it: the layers (host directories, top first: the pod's upper dir, then the
 * image's rootfs) are walked one component at a time through fds opened with O_PATH|O_NOFOLLOW,
 * each lookup relative to the directory fd before it (via /proc/self/fd, openat's path form), so
 * no host symlink is ever followed and nothing swapped in meanwhile redirects the walk. Symlinks
 * in the container's tree are followed the way the container would follow them, but inside the
 * root: an absolute target restarts at the root, `..` stops at the root (what in-root-path.ts
 * does for the image extractor, and openat2's RESOLVE_IN_ROOT). Overlay semantics: a whiteout
 * (a character device 0/0) in a layer hides the name below it, an opaque directory hides the
 * lower layers' directories of that name, and any non-directory hides everything below it.
 * overlayfs's `redirect_dir` and metacopy features are not followed: berth mounts without them.
 */
export class LayeredRoot {
  readonly #opened = new Set<number>();

  readonly #roots: readonly number[];

  private constructor(roots: readonly number[]) {
    this.#roots = roots;
  }

  /** Opens the layers' top directories; missing ones are skipped (an image may have no layer). */
  static open(layers: readonly string[]): LayeredRoot {
    const roots: number[] = [];
    for (const layer of layers) {
      try {
        roots.push(openSync(layer, lookupFlags | constants.O_DIRECTORY));
      } catch (err) {
        if (errnoCode(err) !== 'ENOENT') {
          for (const fd of roots) closeSync(fd);
          throw err;
        }
      }
    }
    const root = new LayeredRoot(roots);
    for (const fd of roots) root.#opened.add(fd);
    return root;
  }

  close(): void {
    for (const fd of this.#opened) closeSync(fd);
    this.#opened.clear();
  }

  /**
   * Closes the fds an entry holds (and those hidden behind it during its lookup are already
   * closed): a walk over a big tree releases what it is done with instead of holding every fd
   * until `close`.
   */
  release(entry: RootEntry): void {
    const fds = entry.kind === 'dir' ? entry.fds : entry.kind === 'other' ? [entry.fd] : [];
    for (const fd of fds) {
      if (this.#roots.includes(fd) || !this.#opened.delete(fd)) continue;
      closeSync(fd);
    }
  }

  /** `name` in the merged directory made of `dirFds` (top first). */
  #lookup(dirFds: readonly number[], name: string): Entry {
    const seen: number[] = [];
    const entry = this.#lookupIn(dirFds, name, seen);
    const kept = entry.kind === 'dir' ? entry.fds : entry.kind === 'other' ? [entry.fd] : [];
    for (const fd of seen) {
      if (kept.includes(fd)) this.#opened.add(fd);
      else closeSync(fd);
    }
    return entry;
  }

  /** `lookup`'s walk over the layers; every fd it opens goes into `seen`. */
  #lookupIn(dirFds: readonly number[], name: string, seen: number[]): Entry {
    const dirs: number[] = [];
    for (const dirFd of dirFds) {
      let fd: number;
      try {
        fd = openSync(fdPath(dirFd, name), lookupFlags);
      } catch (err) {
        const code = errnoCode(err);
        if (code === 'ENOENT' || code === 'ENOTDIR') continue;
        throw err;
      }
      seen.push(fd);
      const stat = fstatSync(fd);
      if (stat.isCharacterDevice() && stat.rdev === 0) break; // a whiteout: nothing below shows
      if (stat.isDirectory()) {
        dirs.push(fd);
        if (nativeAddon().getxattr(fdPath(fd), opaqueXattr) === 'y') break;
        continue;
      }
      if (dirs.length > 0) break; // a directory above hides whatever this is
      if (stat.isSymbolicLink()) {
        // readlink(2) on the name itself, relative to its directory: a magic /proc link is
        // followed only up to the directory, the last component is read, not followed.
        return { kind: 'symlink', target: readlinkSync(fdPath(dirFd, name)) };
      }
      return { kind: 'other', fd, isFile: stat.isFile() };
    }
    return dirs.length > 0 ? { kind: 'dir', fds: dirs } : { kind: 'missing' };
  }

  /**
   * What `path` is in the merged root, every symlink on the way resolved inside the root; the last
   * component's own symlink is followed when `followLast`, else returned as it is (lstat's view).
   * The root itself is a `dir`.
   */
  entryAt(path: string, followLast = false): RootEntry {
    // A trailing slash asks for what the name resolves to, as in POSIX path resolution.
    const follow = followLast || /\/\.?$/.test(path);
    // Each element is one merged directory on the way down, so `..` goes back to its parent.
    const stack: (readonly number[])[] = [this.#roots];
    const pending = path.split('/');
    let links = 0;
    const rest = () => pending.some((p) => p !== '' && p !== '.');
    while (pending.length > 0) {
      const part = pending.shift() as string;
      if (part === '' || part === '.') continue;
      if (part === '..') {
        if (stack.length > 1) stack.pop();
        continue;
      }
      const entry = this.#lookup(stack[stack.length - 1] as readonly number[], part);
      if (entry.kind === 'missing') return entry;
      if (entry.kind === 'symlink') {
        if (!follow && !rest()) return entry;
        links += 1;
        if (links > maxSymlinks) return { kind: 'missing' };
        if (entry.target.startsWith('/')) stack.length = 1;
        pending.unshift(...entry.target.split('/'));
        continue;
      }
      if (entry.kind === 'dir') {
        stack.push(entry.fds);
        continue;
      }
      // A file: the end of the path, or a component that cannot be walked through (ENOTDIR).
      if (rest()) {
        this.release(entry);
        return { kind: 'missing' };
      }
      return entry;
    }
    return { kind: 'dir', fds: stack[stack.length - 1] as readonly number[] };
  }

  /** `name` (one component, no slash) in a merged directory, its symlink not followed. */
  child(dir: RootEntry & { readonly kind: 'dir' }, name: string): RootEntry {
    if (name === '' || name === '.' || name === '..' || name.includes('/')) return { kind: 'missing' };
    return this.#lookup(dir.fds, name);
  }

  /**
   * The names a merged directory shows, sorted: every layer's names (`child` then says which
   * of them a whiteout or an upper non-directory hides, and those read as `missing`).
   */
  names(dir: RootEntry & { readonly kind: 'dir' }): string[] {
    const names = new Set<string>();
    for (const fd of dir.fds) for (const name of readdirSync(fdPath(fd))) names.add(name);
    return [...names].sort();
  }

  /**
   * An fd (O_RDONLY) of a regular file entry. Reopening the O_PATH fd (opened O_NOFOLLOW on the
   * name) through its /proc link opens that very inode, with no path walk; O_NOFOLLOW here would
   * refuse the magic link itself. The caller closes it.
   */
  openEntry(entry: RootEntry & { readonly kind: 'other' }): number | undefined {
    if (!entry.isFile) return undefined;
    const fd = openSync(fdPath(entry.fd), constants.O_RDONLY);
    if (!fstatSync(fd).isFile()) {
      closeSync(fd);
      return undefined;
    }
    return fd;
  }

  /**
   * An fd (O_RDONLY) of the regular file at `path` in the merged root, every symlink on the way
   * resolved inside the root; undefined when there is none there or it is not a regular file.
   * The caller closes it.
   */
  openFile(path: string): number | undefined {
    const entry = this.entryAt(path, true);
    return entry.kind === 'other' ? this.openEntry(entry) : undefined; // missing, or a directory
  }
}

/**
 * The first `limit` bytes of the regular file at `path` in the root made of `layers` (top first),
 * read as LayeredRoot resolves it; undefined when there is no such file.
 */
export function readInLayeredRoot(
  layers: readonly string[],
  path: string,
  limit: number,
): Buffer | undefined {
  const root = LayeredRoot.open(layers);
  try {
    const fd = root.openFile(path);
    if (fd === undefined) return undefined;
    try {
      const buffer = Buffer.alloc(limit);
      let total = 0;
      while (total < limit) {
        const n = readSync(fd, buffer, total, limit - total, total);
        if (n === 0) break;
        total += n;
      }
      return buffer.subarray(0, total);
    } finally {
      closeSync(fd);
    }
  } finally {
    root.close();
  }
}
