import { BerthError, errnoCode } from '../core/index.js';
import { nativeAddon } from './native-addon.js';

/**
 * Opens a directory read-only through a private, detached, read-only copy of its mount. On that
 * fd ".." never leaves the directory and nothing can be written: a process given it (the
 * container, which holds its pod's lock fd) cannot reach the rest of the host's filesystem.
 * flock(2) on it is a lock on the directory itself, as on any other fd of it.
 * Errors carry the errno's name as `code` (ENOENT, ENOTDIR …), as Node's fs errors do.
 */
export function openConfinedDirFd(path: string): number {
  try {
    return nativeAddon().openConfinedDir(path);
  } catch (err) {
    if (errnoCode(err) !== 'ENOSYS') throw err;
    throw new BerthError(
      'unavailable',
      `berth needs Linux 5.12 or later to confine a pod's lock (open_tree and mount_setattr): ${err instanceof Error ? err.message : String(err)}`,
      {},
      { cause: err },
    );
  }
}
