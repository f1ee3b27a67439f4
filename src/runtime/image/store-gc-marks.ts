import { mkdirSync } from 'node:fs';
import { readdir, rm, stat, unlink, utimes, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { errnoCode } from '../../core/index.js';
import { parseBlobDigest } from './digest.js';
import type { StoreLayout } from './store-layout.js';

/** What gc must keep although no image record references it: fresh blobs and live rootfs dirs. */

/** Marks a blob as pushed or pulled just now (see GcOptions.pendingGraceMs). */
export async function markPending(layout: StoreLayout, digest: string): Promise<void> {
  mkdirSync(layout.pending, { recursive: true, mode: 0o755 });
  const path = join(layout.pending, parseBlobDigest(digest).hex);
  const now = new Date();
  await utimes(path, now, now).catch(async (err: unknown) => {
    if (errnoCode(err) !== 'ENOENT') throw err;
    await writeFile(path, '', { mode: 0o644 });
  });
}

/** Drops the pending marks of blobs an image now references. */
export async function clearPending(layout: StoreLayout, digests: readonly string[]): Promise<void> {
  for (const digest of digests) {
    // catch-all: a mark already gone (never set, or swept) is what this wants.
    await unlink(join(layout.pending, parseBlobDigest(digest).hex)).catch(() => undefined);
  }
}

/** Hex digests of blobs marked pending within the grace period; older marks are deleted. */
export async function pendingBlobs(layout: StoreLayout, graceMs: number): Promise<Set<string>> {
  const fresh = new Set<string>();
  const names = await readdir(layout.pending).catch(() => [] as string[]);
  const cutoff = Date.now() - graceMs;
  for (const hex of names) {
    const path = join(layout.pending, hex);
    const info = await stat(path).catch(() => undefined);
    if (info !== undefined && info.mtimeMs > cutoff) fresh.add(hex);
    else await rm(path, { force: true });
  }
  return fresh;
}

/**
 * Hex ids of the image rootfs dirs that pods being prepared, prepared or running use (their
 * pod.json `image.rootfs`): deleting one would pull the lower dir from under a live overlay or
 * make a prepared pod unstartable. Loaded lazily: the pod store needs the flock addon.
 */
export async function rootfsInUse(dataDir: string): Promise<Set<string>> {
  const { PodStore } = await import('../pod-store.js');
  const pods = new PodStore(dataDir);
  const used = new Set<string>();
  for (const phase of ['prepare', 'prepared', 'run'] as const) {
    for (const uuid of pods.listPhase(phase)) {
      const info = pods.inspect({ uuid, phase });
      if (info === undefined) continue;
      if (info.state !== 'preparing' && info.state !== 'prepared' && info.state !== 'running') continue;
      const rootfs = info.manifest?.image.rootfs;
      if (rootfs !== undefined && basename(dirname(rootfs)) === 'rootfs') used.add(basename(rootfs));
    }
  }
  return used;
}
