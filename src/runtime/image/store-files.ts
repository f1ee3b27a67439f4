import { mkdtemp, open, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { StoreLayout } from './store-layout.js';

/** A fresh private directory under `tmp/` for one import or removal (mode 0700). */
export function makeWorkDir(layout: StoreLayout, purpose: string): Promise<string> {
  return mkdtemp(join(layout.tmp, `${purpose}-`));
}

export function tempName(layout: StoreLayout, hint: string): string {
  // Unique enough with the pid; files are opened O_EXCL ('wx') anyway. No node:crypto: this
  // module is on the pod hot path's import graph.
  const random = Math.floor(Math.random() * 2 ** 48).toString(16);
  return join(layout.tmp, `${hint}-${process.pid}-${random}`);
}

/**
 * Writes a store file atomically and durably: the temp file lives in `tmp/` (same filesystem,
 * swept if this process dies before the rename), is fsynced, then renamed over the target.
 */
export async function writeStoreFile(
  layout: StoreLayout,
  path: string,
  data: string | Uint8Array,
): Promise<void> {
  const tmp = tempName(layout, 'file');
  try {
    const handle = await open(tmp, 'wx', 0o644);
    try {
      await handle.writeFile(data);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}
