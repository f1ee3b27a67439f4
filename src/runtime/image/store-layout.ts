import { join } from 'node:path';
import { digestHex } from './digest.js';

/**
 * Where everything of the image store lives, under `<data dir>/images`:
 *
 *   blobs/sha256/<hex>   every blob (manifest, config, layer) named by its verified digest
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
  }

  blob(digest: string): string {
    return join(this.blobs, digestHex(digest));
  }

  rootfs(id: string): string {
    return join(this.rootfsDir, digestHex(id, 'image id'));
  }

  record(id: string): string {
    return join(this.records, `${digestHex(id, 'image id')}.json`);
  }
}
