import { type Dirent, readdirSync, rmdirSync, rmSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { errnoCode } from './berth-error.js';

/**
 * Deletes a directory tree as `rm -rf` does; a missing path is no error. It walks with the file
 * types readdir(3) already returns, where Node's `rmSync` lstat(2)s every entry first: for gc's
 * sweep of 10,000 pods that is 130,000 system calls fewer. Symlinks are removed, never followed.
 * Anything unusual on the way (a busy mount point, a permission) is left to `rmSync`, with its
 * retries and its error.
 */
export function removeTree(path: string): void {
  try {
    removeWalk(path);
  } catch {
    rmSync(path, { recursive: true, force: true, maxRetries: 3 });
  }
}

function removeWalk(path: string): void {
  let entries: Dirent[];
  try {
    entries = readdirSync(path, { withFileTypes: true });
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return;
    if (errnoCode(err) !== 'ENOTDIR') throw err;
    ignoreMissing(() => unlinkSync(path));
    return;
  }
  for (const entry of entries) {
    const child = join(path, entry.name);
    // Node fills in the type with lstat(2) where the file system reports none (DT_UNKNOWN).
    if (entry.isDirectory()) removeWalk(child);
    else ignoreMissing(() => unlinkSync(child));
  }
  ignoreMissing(() => rmdirSync(path));
}

function ignoreMissing(fn: () => void): void {
  try {
    fn();
  } catch (err) {
    if (errnoCode(err) !== 'ENOENT') throw err;
  }
}
