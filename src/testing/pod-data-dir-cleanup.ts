import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { collectGarbage, type ImageResolver, PodRuntime } from '../runtime/index.js';
import { mountsUnder } from '../runtime/mounts.js';

/**
 * Removes a data dir that real runc containers ran in, whatever a failed test left in it: its
 * containers (runc delete --force), its pods (gc), then any mount still under it, then the dir.
 */
export function removePodDataDir(dataDir: string, images: ImageResolver): void {
  const runcRoot = join(dataDir, 'runc');
  if (existsSync(runcRoot))
    for (const id of readdirSync(runcRoot)) spawnSync('runc', ['--root', runcRoot, 'delete', '--force', id]);
  try {
    collectGarbage(new PodRuntime(dataDir, images), { gracePeriodMs: 0, expirePreparedMs: 0 });
  } catch {
    // Removed below all the same.
  }
  for (const point of mountsUnder(dataDir)) spawnSync('umount', ['-l', point]);
  rmSync(dataDir, { recursive: true, force: true });
}
