import { join } from 'node:path';
import { digestHex, parseBlobDigest } from './digest.js';

/**
 * Where everything of the image store lives, under `<data dir>/images`:
 *
 *   blobs/sha256/<hex>   every blob (manifest, config, layer) named by its verified digest
 *   blobs/sha512/<hex>   blobs pushed by sha512 digest (the registry's; images run from sha256)
 *   repositories/<name>/ what the registry was pushed, per repository (repositories.ts)
 *   rootfs/<id hex>/     the flattened root filesystem of each image (read-only for pods)
 *   records/<id hex>.json one record per image: digests, layers, runtime config
 *   names.json           the names index: `name:tag` → image id
 *   tmp/                 imports in progress and removals being deleted (swept when stale)
 *   uploads/<uuid>       registry blob uploads in progress (resumable across requests)
 *   pending/<hex>        marks a blob pushed or pulled but not yet part of an image (gc keeps it)
 *   gc.lock, names.lock  flock(2) files (see store-locks.ts)
 */
export class StoreLayout {
  readonly root: string;
  readonly blobs: string;
  readonly rootfsDir: string;
  readonly records: string;
  readonly tmp: string;
  readonly namesFile: string;
  readonly gcLock: string;
  readonly namesLock: string;
  readonly uploads: string;
  readonly pending: string;
  readonly repositories: string;

  constructor(dataDir: string) {
    this.root = join(dataDir, 'images');
    this.blobs = join(this.root, 'blobs', 'sha256');
    this.rootfsDir = join(this.root, 'rootfs');
    this.records = join(this.root, 'records');
    this.tmp = join(this.root, 'tmp');
    this.namesFile = join(this.root, 'names.json');
    this.gcLock = join(this.root, 'gc.lock');
    this.namesLock = join(this.root, 'names.lock');
    this.uploads = join(this.root, 'uploads');
    this.pending = join(this.root, 'pending');
    this.repositories = join(this.root, 'repositories');
  }

  blob(digest: string): string {
    const { algorithm, hex } = parseBlobDigest(digest);
    return join(this.root, 'blobs', algorithm, hex);
  }

  /** The blob directory of each digest algorithm (for gc). */
  blobDirs(): { readonly algorithm: 'sha256' | 'sha512'; readonly dir: string }[] {
    return (['sha256', 'sha512'] as const).map((algorithm) => ({
      algorithm,
      dir: join(this.root, 'blobs', algorithm),
    }));
  }

  rootfs(id: string): string {
    return join(this.rootfsDir, digestHex(id, 'image id'));
  }

  record(id: string): string {
    return join(this.records, `${digestHex(id, 'image id')}.json`);
  }
}
