import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { readdir, rename, rm, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { errnoCode, InvalidArgumentError, NotFoundError } from '../../core/index.js';
import type { BlobStore } from './blob-store.js';
import { digestHex, isDigest } from './digest.js';
import { type ImageRecord, readRecord, recordBlobs } from './image-record.js';
import { isImageName, normalizeImageName } from './image-reference.js';
import type { ImageSummary, ResolvedImage } from './image-types.js';
import { type NamesIndex, namesOf, readNames, writeNames } from './names-index.js';
import { makeWorkDir } from './store-files.js';
import { StoreLayout } from './store-layout.js';
import { StoreLocks } from './store-locks.js';

export interface RemoveResult {
  /** Names that no longer point at the image. */
  readonly untagged: readonly string[];
  /** The id of the image whose data was deleted, if it was (no name was left). */
  readonly deleted?: string;
}

export interface GcResult {
  /** False when an import or removal was under way, so nothing could safely be swept. */
  readonly ran: boolean;
  readonly blobsRemoved: number;
  readonly rootfsRemoved: number;
  readonly tmpRemoved: number;
}

interface Found {
  readonly id: string;
  /** Set when the reference was a name (then `remove` untags only that name). */
  readonly name?: string;
}

const hexPrefix = /^[a-f0-9]{4,64}$/;

/**
 * The content-addressed OCI image store under `<data dir>/images` (layout: store-layout.ts).
 * Reading (`resolve`, `list`) takes no lock and does no writes, so the pod hot path stays cheap;
 * imports load tar and zlib code only when called.
 */
export class ImageStore {
  private readonly layout: StoreLayout;
  private readonly locks: StoreLocks;

  constructor(readonly dataDir: string) {
    this.layout = new StoreLayout(dataDir);
    this.locks = new StoreLocks(this.layout);
    for (const dir of [this.layout.blobs, this.layout.rootfsDir, this.layout.records]) {
      mkdirSync(dir, { recursive: true, mode: 0o755 });
    }
    mkdirSync(this.layout.tmp, { recursive: true, mode: 0o700 });
  }

  /** Imports a docker-archive or oci-archive tarball (plain or gzip) or an OCI layout directory. */
  async importArchive(path: string, options: { readonly name?: string } = {}): Promise<ImageSummary> {
    const { importArchive } = await import('./image-importer.js');
    return importArchive(await this.deps(), path, options);
  }

  /** Makes a single-layer image of a directory (Env PATH default, Cmd ["/bin/sh"]). */
  async importRootfs(dir: string, name: string): Promise<ImageSummary> {
    const { importRootfs } = await import('./image-importer.js');
    return importRootfs(await this.deps(), dir, name);
  }

  list(): ImageSummary[] {
    const names = readNames(this.layout);
    return this.records()
      .map((record) => summary(record, names))
      .sort((a, b) => b.created.localeCompare(a.created) || a.id.localeCompare(b.id));
  }

  async resolve(ref: string): Promise<ResolvedImage> {
    const names = readNames(this.layout);
    const { id } = this.find(ref, names);
    const record = readRecord(this.layout, id);
    if (record === undefined) throw new NotFoundError('image', ref);
    return { ...summary(record, names), config: record.config, rootfs: this.layout.rootfs(id) };
  }

  /**
   * Removes a name; the image's data goes when no name is left. An id (or id prefix) removes
   * the image with all its names. Pods are not consulted: a pod running from a removed image
   * keeps its mounted rootfs until it exits, but pods prepared from it will fail to start.
   */
  async remove(ref: string): Promise<RemoveResult> {
    const lease = await this.locks.holdForWork();
    let trash: string | undefined;
    let result: RemoveResult;
    try {
      result = await this.locks.withNamesLock(async () => {
        const names = readNames(this.layout);
        const found = this.find(ref, names);
        const untagged = found.name === undefined ? namesOf(names, found.id) : [found.name];
        for (const name of untagged) delete names[name];
        const deleted = namesOf(names, found.id).length === 0 ? found.id : undefined;
        if (untagged.length > 0) await writeNames(this.layout, names);
        if (deleted !== undefined) {
          // Record first: a crash after it leaves a complete rootfs without a record, which a
          // later import of the same image reuses and gc otherwise deletes.
          await unlink(this.layout.record(deleted)).catch(ignoreMissing);
          trash = await makeWorkDir(this.layout, 'remove');
          await rename(this.layout.rootfs(deleted), join(trash, 'rootfs')).catch(ignoreMissing);
        }
        return deleted === undefined ? { untagged } : { untagged, deleted };
      });
    } finally {
      if (trash !== undefined) await rm(trash, { recursive: true, force: true });
      lease.release();
    }
    if (result.deleted !== undefined) await this.gc();
    return result;
  }

  /**
   * Sweeps what no image record references: blobs, rootfs dirs left by a crash between publish
   * steps, and `tmp/` debris of killed imports. Skips (ran: false) while any import or removal
   * is under way in any process, since their blobs are not referenced yet.
   */
  async gc(): Promise<GcResult> {
    const lease = await this.locks.tryHoldForGc();
    if (lease === undefined) return { ran: false, blobsRemoved: 0, rootfsRemoved: 0, tmpRemoved: 0 };
    try {
      const tmpRemoved = await this.locks.sweepTmp();
      return await this.locks.withNamesLock(async () => {
        const records = this.records();
        const live = new Set(records.flatMap((r) => recordBlobs(r).map((d) => digestHex(d))));
        const ids = new Set(records.map((r) => digestHex(r.id)));
        let blobsRemoved = 0;
        for (const hex of await readdir(this.layout.blobs)) {
          if (live.has(hex)) continue;
          await rm(join(this.layout.blobs, hex), { force: true });
          blobsRemoved += 1;
        }
        let rootfsRemoved = 0;
        for (const hex of await readdir(this.layout.rootfsDir)) {
          if (ids.has(hex)) continue;
          await rm(join(this.layout.rootfsDir, hex), { recursive: true, force: true });
          rootfsRemoved += 1;
        }
        return { ran: true, blobsRemoved, rootfsRemoved, tmpRemoved };
      });
    } finally {
      lease.release();
    }
  }

  /** Path of a blob in the store (whether or not it is there), for the registry to serve. */
  blobPath(digest: string): string {
    return this.layout.blob(digest);
  }

  hasBlob(digest: string): boolean {
    return existsSync(this.layout.blob(digest));
  }

  /** The blob writer (and node:crypto with it) loads only for imports, off the pod hot path. */
  private async deps(): Promise<{ layout: StoreLayout; blobs: BlobStore; locks: StoreLocks }> {
    const { BlobStore } = await import('./blob-store.js');
    return { layout: this.layout, blobs: new BlobStore(this.layout), locks: this.locks };
  }

  private records(): ImageRecord[] {
    return readdirSync(this.layout.records)
      .filter((f) => /^[a-f0-9]{64}\.json$/.test(f))
      .map((f) => readRecord(this.layout, `sha256:${f.slice(0, 64)}`))
      .filter((r): r is ImageRecord => r !== undefined);
  }

  /** name:tag, short name (`busybox` for `docker.io/library/busybox:latest`), id, id prefix. */
  private find(ref: string, names: NamesIndex): Found {
    if (ref.startsWith('sha256:')) {
      if (isDigest(ref)) return { id: ref };
      return this.findByPrefix(ref, ref.slice('sha256:'.length));
    }
    if (isImageName(ref)) {
      const name = normalizeImageName(ref);
      const id = names[name];
      if (id !== undefined) return { id, name };
      const short = Object.keys(names).filter((n) => n.endsWith(`/${name}`));
      if (short.length > 1) {
        throw new InvalidArgumentError(
          `Cannot resolve image "${ref}": it is short for ${short.map((n) => `"${n}"`).join(', ')}; give the full name`,
        );
      }
      const only = short[0];
      const onlyId = only === undefined ? undefined : names[only];
      if (only !== undefined && onlyId !== undefined) return { id: onlyId, name: only };
    }
    if (hexPrefix.test(ref)) return this.findByPrefix(ref, ref);
    throw new NotFoundError('image', ref);
  }

  private findByPrefix(ref: string, prefix: string): Found {
    if (!hexPrefix.test(prefix)) throw new NotFoundError('image', ref);
    const matches = readdirSync(this.layout.records).filter(
      (f) => f.startsWith(prefix) && f.endsWith('.json'),
    );
    if (matches.length > 1) {
      throw new InvalidArgumentError(
        `Cannot resolve image "${ref}": the id prefix matches ${matches.length} images; give more of the id`,
      );
    }
    const match = matches[0];
    if (match === undefined) throw new NotFoundError('image', ref);
    return { id: `sha256:${match.slice(0, 64)}` };
  }
}

function summary(record: ImageRecord, names: NamesIndex): ImageSummary {
  return {
    id: record.id,
    names: namesOf(names, record.id),
    manifestDigest: record.manifestDigest,
    size: record.size,
    created: record.created,
  };
}

function ignoreMissing(err: unknown): void {
  if (errnoCode(err) !== 'ENOENT') throw err;
}
