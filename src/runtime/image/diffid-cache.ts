import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { errnoCode } from '../../core/index.js';
import { parseBlobDigest } from './digest.js';
import { tempName } from './store-files.js';
import type { StoreLayout } from './store-layout.js';

/**
 * The store's cache of uncompressed digests, `diffids/<alg>/<hex>` holding `sha256:<hex>`: what
 * a layer blob inflates to, as computed when it was uploaded or last extracted. Only the store
 * writes it, from bytes it hashed itself, so it is as trusted as the blob it names.
 */
export function diffIdPath(layout: StoreLayout, blobDigest: string): string {
  const { algorithm, hex } = parseBlobDigest(blobDigest);
  return join(layout.root, 'diffids', algorithm, hex);
}

export async function cachedDiffId(layout: StoreLayout, blobDigest: string): Promise<string | undefined> {
  const text = await readFile(diffIdPath(layout, blobDigest), 'utf8').catch((err: unknown) => {
    if (errnoCode(err) === 'ENOENT') return undefined;
    throw err;
  });
  return text !== undefined && /^sha256:[a-f0-9]{64}$/.test(text) ? text : undefined;
}

export async function cacheDiffId(layout: StoreLayout, blobDigest: string, diffId: string): Promise<void> {
  const path = diffIdPath(layout, blobDigest);
  await mkdir(dirname(path), { recursive: true, mode: 0o755 });
  // No fsync: a cache entry lost or torn by a crash fails the pattern check and is recomputed.
  const tmp = tempName(layout, 'diffid');
  try {
    await writeFile(tmp, diffId, { flag: 'wx', mode: 0o644 });
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}
