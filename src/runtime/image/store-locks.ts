import { closeSync, constants, openSync } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { StoreLayout } from './store-layout.js';

/** A held flock(2); closing the fd releases it, and so does the kernel if the process dies. */
export interface Lease {
  release(): void;
}

/** libuv opens every fd with O_CLOEXEC, so runc and other children never inherit these locks. */
/** flock(2) is in berth's native addon: loaded on first lock, so `resolve` alone never pays for it. */
function flock() {
  return import('../flock.js');
}

function openLockFile(path: string): number {
  return openSync(path, constants.O_RDWR | constants.O_CREAT, 0o600);
}

function lease(fd: number): Lease {
  let open = true;
  return {
    release() {
      if (open) closeSync(fd);
      open = false;
    },
  };
}

/**
 * Two locks keep concurrent berth processes (no daemon) from corrupting the store:
 *
 * - `gc.lock`: every import or removal holds it shared while it has files under `tmp/` or blobs
 *   not yet referenced by a record. Whoever gets it exclusive knows nobody is mid-import, so
 *   everything in `tmp/` is debris of a crash and every unreferenced blob is garbage.
 * - `names.lock`: exclusive around the short metadata steps (publish a rootfs, write a record,
 *   rewrite the names index, unpublish), so read-modify-write of the names index never loses an
 *   update. Readers (`resolve`, `list`) take no lock: every file they read is replaced by rename.
 */
export class StoreLocks {
  constructor(private readonly layout: StoreLayout) {}

  /**
   * Shared gc lease for an import. If no one else holds the lock at all, first sweeps `tmp/`
   * (left by a crashed or killed import), then downgrades. A downgrade is not atomic in flock(2),
   * which is harmless: this process has nothing in `tmp/` yet.
   */
  async holdForWork(): Promise<Lease> {
    const { tryLock, waitLock } = await flock();
    const fd = openLockFile(this.layout.gcLock);
    try {
      if (tryLock(fd, 'exclusive')) await this.sweepTmp();
      await waitLock(fd, 'shared');
      return lease(fd);
    } catch (err) {
      closeSync(fd);
      throw err;
    }
  }

  /** Exclusive gc lease, or undefined at once when any import or removal is under way. */
  async tryHoldForGc(): Promise<Lease | undefined> {
    const { tryLock } = await flock();
    const fd = openLockFile(this.layout.gcLock);
    if (tryLock(fd, 'exclusive')) return lease(fd);
    closeSync(fd);
    return undefined;
  }

  async withNamesLock<T>(fn: () => Promise<T>): Promise<T> {
    const { waitLock } = await flock();
    const fd = openLockFile(this.layout.namesLock);
    try {
      await waitLock(fd, 'exclusive');
      return await fn();
    } finally {
      closeSync(fd);
    }
  }

  /** Deletes everything in `tmp/`; only call while holding the gc lock exclusively. */
  async sweepTmp(): Promise<number> {
    const entries = await readdir(this.layout.tmp).catch(() => [] as string[]);
    for (const entry of entries) await rm(join(this.layout.tmp, entry), { recursive: true, force: true });
    return entries.length;
  }
}
