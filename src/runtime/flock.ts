import { closeSync, constants, openSync } from 'node:fs';
import { errnoCode } from '../core/index.js';
import { nativeAddon } from './native-addon.js';

// flock(2) operations (<sys/file.h>).
const LOCK_SH = 1;
const LOCK_EX = 2;
const LOCK_NB = 4;
const LOCK_UN = 8;

/**
 * flock(2) on pod directories: the whole of a pod's process-bound state (seed 000). Locks belong
 * to the open file description, so a child that inherits the fd (runc, the container, the
 * watcher) holds the same lock, and the kernel drops it when the last of them exits.
 */
export type LockMode = 'shared' | 'exclusive';

/**
 * Opens a directory read-only for locking. Throws ENOENT if it moved or vanished, and ENOTDIR
 * if what is at the path now is no directory: see `isGoneCode`.
 */
export function openDirFd(path: string): number {
  return openSync(path, constants.O_RDONLY | constants.O_DIRECTORY);
}

/**
 * Whether an errno from opening a pod dir means "no pod dir is there now": gone (ENOENT), or a
 * file at its name (ENOTDIR), which an older berth's `wait --timeout` could leave (flock(1) given
 * the path of a pod dir that had just moved on creates one). Such a file is no pod, and one must
 * not fail a whole listing; gc removes it (`PodStore.listStray`).
 */
export function isGoneCode(code: string | undefined): boolean {
  return code === 'ENOENT' || code === 'ENOTDIR';
}

/** Non-blocking attempt; false when another open file description holds a conflicting lock. */
export function tryLock(fd: number, mode: LockMode): boolean {
  try {
    nativeAddon().flock(fd, (mode === 'shared' ? LOCK_SH : LOCK_EX) | LOCK_NB);
    return true;
  } catch (err) {
    if (errnoCode(err) === 'EWOULDBLOCK' || errnoCode(err) === 'EAGAIN') return false;
    throw err;
  }
}

/** Blocks (on libuv's thread pool, not by polling) until the lock is granted. */
export function waitLock(fd: number, mode: LockMode): Promise<void> {
  return new Promise((resolve, reject) => {
    nativeAddon().flockWait(fd, mode === 'shared' ? LOCK_SH : LOCK_EX, (err) =>
      err ? reject(err) : resolve(),
    );
  });
}

export function unlock(fd: number): void {
  nativeAddon().flock(fd, LOCK_UN);
}

/**
 * Samples whether anyone holds the directory's lock exclusively: the "locked" column of the
 * seed's tables. Returns undefined when the directory is gone (it moved to another phase).
 */
export function isLocked(path: string): boolean | undefined {
  let fd: number;
  try {
    fd = openDirFd(path);
  } catch (err) {
    if (isGoneCode(errnoCode(err))) return undefined;
    throw err;
  }
  try {
    return !tryLock(fd, 'shared');
  } finally {
    closeSync(fd);
  }
}
