import { existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { readdir, rename, rm, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Readable } from 'node:stream';
import { errnoCode, InvalidArgumentError, NotFoundError } from '../../core/index.js';
import type { BlobStore, StoredBlob } from './blob-store.js';
import { cacheDiffId } from './diffid-cache.js';
import { digestAlgorithm, digestHex, isDigest, parseBlobDigest } from './digest.js';
import type { ManifestImportOptions } from './image-importer.js';
import { type ImageRecord, readRecord, recordBlobs } from './image-record.js';
import { isImageName, normalizeImageName } from './image-reference.js';
import type { ImageSummary, ResolvedImage } from './image-types.js';
import { type NamesIndex, namesOf, readNames, writeNames } from './names-index.js';
import { runnableOfTag } from './pushed-tag-image.js';
import { pushedBlobs, Repositories } from './repositories.js';
import { makeWorkDir, tempName, writeStoreFile } from './store-files.js';
import { clearPending, markPending, pendingBlobs, rootfsInUse } from './store-gc-marks.js';
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
  /** Bytes of the blobs removed. */
  readonly bytesRemoved?: number;
  /** Unreferenced blobs kept because they were pushed or pulled within the grace period. */
  readonly pendingKept?: number;
  /** Rootfs dirs of removed images kept because a live pod still uses them. */
  readonly rootfsInUse?: number;
}

export interface GcOptions {
  /**
   * A blob pushed to the registry (or pulled) is unreferenced until its manifest arrives; gc
   * keeps such blobs this long after they were written. Default 1 hour.
   */
  readonly pendingGraceMs?: number;
}

/** A manifest as the store keeps it, for the registry to serve. */
export interface StoredManifest {
  readonly digest: string;
  readonly mediaType: string;
  /** The image (config digest) the manifest describes. */
  readonly id: string;
}

/** The blob of a registry upload, written and hashed by the caller in `uploadsDir()`. */
export interface HashedFile {
  readonly path: string;
  readonly digest: string;
  readonly size: number;
  /** The sha256 of its uncompressed bytes, when the uploader inflated it on the way. */
  readonly diffId?: string;
}

const defaultPendingGraceMs = 60 * 60 * 1000;

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
  readonly #layout: StoreLayout;
  readonly #locks: StoreLocks;
  /** What the registry was pushed, per repository (see repositories.ts). */
  readonly repositories: Repositories;
  /** Rootfs dirs being written for deferred images, by image id (see `resolve`). */
  readonly #materializing = new Map<string, Promise<void>>();

  constructor(readonly dataDir: string) {
    this.#layout = new StoreLayout(dataDir);
    this.#locks = new StoreLocks(this.#layout);
    this.repositories = new Repositories(this.#layout);
    for (const dir of [this.#layout.blobs, this.#layout.rootfsDir, this.#layout.records]) {
      mkdirSync(dir, { recursive: true, mode: 0o755 });
    }
    mkdirSync(this.#layout.tmp, { recursive: true, mode: 0o700 });
  }

  /** Imports a docker-archive or oci-archive tarball (plain or gzip) or an OCI layout directory. */
  async importArchive(path: string, options: { readonly name?: string } = {}): Promise<ImageSummary> {
    const { importArchive } = await import('./image-importer.js');
    const image = await importArchive(await this.#deps(), path, options);
    await this.#dropPushedTags(options.name === undefined ? [] : [normalizeImageName(options.name)]);
    return image;
  }

  /** Makes a single-layer image of a directory (Env PATH default, Cmd ["/bin/sh"]). */
  async importRootfs(dir: string, name: string): Promise<ImageSummary> {
    const { importRootfs } = await import('./image-importer.js');
    const image = await importRootfs(await this.#deps(), dir, name);
    await this.#dropPushedTags([normalizeImageName(name)]);
    return image;
  }

  /**
   * Imports a manifest whose config and layer blobs are already in the store (put there by
   * `putBlob`/`adoptBlob`), verifying and flattening it exactly like an OCI layout import.
   */
  async importManifest(
    manifest: Buffer,
    mediaType: string,
    options: ManifestImportOptions & { readonly keepPushedTag?: boolean } = {},
  ): Promise<ImageSummary> {
    const { importManifest } = await import('./image-importer.js');
    const image = await importManifest(await this.#deps(), manifest, mediaType, options);
    if (options.keepPushedTag !== true) {
      await this.#dropPushedTags(options.name === undefined ? [] : [normalizeImageName(options.name)]);
    }
    // The blobs belong to an image now: their pending marks are no longer needed.
    const record = readRecord(this.#layout, image.id);
    if (record !== undefined) await clearPending(this.#layout, recordBlobs(record));
    return image;
  }

  /**
   * Writes a blob from a stream (a registry download), hashing it on the way; refuses it unless
   * it has the expected digest (and size). The blob is marked pending so gc keeps it until an
   * image references it (or the grace period ends).
   */
  async putBlob(
    source: Readable | AsyncIterable<Uint8Array>,
    expected: { readonly digest: string; readonly size?: number },
    what = `the blob ${expected.digest}`,
    options: { readonly verifiedStream?: boolean } = {},
  ): Promise<StoredBlob> {
    parseBlobDigest(expected.digest);
    const { writeStreamHashing } = await import('./blob-store.js');
    const lease = await this.#locks.holdForWork();
    try {
      const deps = await this.#deps();
      const tmp = tempName(this.#layout, 'pull');
      try {
        // A verified stream (the registry client's) fails unless it hashes to `expected`.
        const written = await writeStreamHashing(
          source,
          tmp,
          options.verifiedStream === true ? 'verified' : digestAlgorithm(expected.digest),
        );
        await markPending(this.#layout, expected.digest);
        const digest = written.digest ?? expected.digest;
        return await deps.blobs.ingest(
          { digest, size: written.size, path: tmp, staged: true },
          what,
          expected,
        );
      } finally {
        await rm(tmp, { force: true });
      }
    } finally {
      lease.release();
    }
  }

  /**
   * Moves a complete, fsynced, hashed file from `uploadsDir()` into the store as a blob, if
   * `digest` is what the uploader hashed. The blob is marked pending (see `putBlob`).
   */
  async adoptBlob(
    file: HashedFile,
    expected: { readonly digest: string },
    what: string,
  ): Promise<StoredBlob> {
    parseBlobDigest(expected.digest);
    const lease = await this.#locks.holdForWork();
    try {
      const deps = await this.#deps();
      await markPending(this.#layout, expected.digest);
      const stored = await deps.blobs.ingest({ ...file, staged: true }, what, expected);
      if (file.diffId !== undefined) await cacheDiffId(this.#layout, stored.digest, file.diffId);
      return stored;
    } finally {
      lease.release();
    }
  }

  /**
   * Writes a pushed manifest's bytes as the blob of `digest` (which the caller computed from
   * them), then runs `link` (the repository's metadata) with the gc lock held shared, so gc
   * never sees the blob before what references it.
   */
  async putManifestBlob<T>(bytes: Uint8Array, digest: string, link: () => Promise<T>): Promise<T> {
    const lease = await this.#locks.holdForWork();
    try {
      const path = this.#layout.blob(digest);
      if (!existsSync(path)) {
        mkdirSync(dirname(path), { recursive: true, mode: 0o755 });
        await writeStoreFile(this.#layout, path, bytes);
      }
      return await link();
    } finally {
      lease.release();
    }
  }

  /** Where the registry keeps uploads in progress: same filesystem as the blobs, for rename. */
  uploadsDir(): string {
    mkdirSync(this.#layout.uploads, { recursive: true, mode: 0o700 });
    return this.#layout.uploads;
  }

  /** The names index (`name:tag` → image id), as the registry lists tags. */
  names(): Readonly<Record<string, string>> {
    return readNames(this.#layout);
  }

  /** The manifest of the image `name:tag` points at, if the name exists. */
  manifestByName(name: string): StoredManifest | undefined {
    const id = readNames(this.#layout)[name];
    const record = id === undefined ? undefined : readRecord(this.#layout, id);
    return record === undefined ? undefined : manifestOf(record);
  }

  /** The stored image whose manifest has this digest, if any. */
  manifestByDigest(digest: string): StoredManifest | undefined {
    const record = this.#records().find((r) => r.manifestDigest === digest);
    return record === undefined ? undefined : manifestOf(record);
  }

  list(): ImageSummary[] {
    const names = readNames(this.#layout);
    return this.#records()
      .map((record) => summary(record, names))
      .sort((a, b) => b.created.localeCompare(a.created) || a.id.localeCompare(b.id));
  }

  /**
   * The image a reference names, with its rootfs on disk: written now if the image was derived
   * from a push that deferred it (`rootfs: 'on-use'`), and derived now if the name is a pushed
   * tag berth has no image for yet (an index whose child for this host came after it).
   */
  async resolve(ref: string): Promise<ResolvedImage> {
    let names = readNames(this.#layout);
    let id: string;
    try {
      ({ id } = this.#find(ref, names));
    } catch (err) {
      if (!(err instanceof NotFoundError)) throw err;
      const derived = await this.#deriveFromPushedTag(ref);
      if (derived === undefined) {
        const { notRunnableError } = await import('./not-runnable.js');
        throw notRunnableError(this.#layout, this.repositories, ref) ?? err;
      }
      id = derived.id;
      names = readNames(this.#layout);
    }
    const record = readRecord(this.#layout, id);
    if (record === undefined) throw new NotFoundError('image', ref);
    await this.#ensureRootfs(record);
    return { ...summary(record, names), config: record.config, rootfs: this.#layout.rootfs(id) };
  }

  /** A pushed tag's runnable manifest imported under `name:tag` (rootfs on use), if it has one. */
  async #deriveFromPushedTag(ref: string): Promise<ImageSummary | undefined> {
    const found = runnableOfTag(this.#layout, this.repositories, ref);
    if (found === undefined) return undefined;
    const { name, runnable } = found;
    const options = { name, rootfs: 'on-use', keepPushedTag: true } as const;
    return this.importManifest(runnable.bytes, runnable.mediaType, options);
  }

  /** Writes a deferred rootfs once per process however many resolve it at the same time. */
  async #ensureRootfs(record: ImageRecord): Promise<void> {
    if (existsSync(this.#layout.rootfs(record.id))) return;
    let pending = this.#materializing.get(record.id);
    if (pending === undefined) {
      pending = (async () => {
        const { materializeRootfs } = await import('./image-importer.js');
        await materializeRootfs(await this.#deps(), record);
      })().finally(() => this.#materializing.delete(record.id));
      this.#materializing.set(record.id, pending);
    }
    await pending;
  }

  /**
   * Removes a name; the image's data goes when no name is left. An id (or id prefix) removes
   * the image with all its names. Pods are not consulted: a pod running from a removed image
   * keeps its mounted rootfs until it exits, but pods prepared from it will fail to start.
   */
  async remove(ref: string): Promise<RemoveResult> {
    const lease = await this.#locks.holdForWork();
    let trash: string | undefined;
    let result: RemoveResult;
    try {
      const inUse = await rootfsInUse(this.dataDir);
      result = await this.#locks.withNamesLock(async () => {
        const names = readNames(this.#layout);
        const found = this.#find(ref, names);
        const untagged = found.name === undefined ? namesOf(names, found.id) : [found.name];
        for (const name of untagged) delete names[name];
        const deleted = namesOf(names, found.id).length === 0 ? found.id : undefined;
        if (untagged.length > 0) await writeNames(this.#layout, names);
        await this.#dropPushedTags(untagged);
        if (deleted !== undefined) {
          // Record first: a crash after it leaves a complete rootfs without a record, which a
          // later import of the same image reuses and gc otherwise deletes.
          await unlink(this.#layout.record(deleted)).catch(ignoreMissing);
          // A live pod's overlay has this rootfs as its lower dir: it stays (without a record)
          // until gc finds no pod using it.
          if (!inUse.has(digestHex(deleted))) {
            trash = await makeWorkDir(this.#layout, 'remove');
            await rename(this.#layout.rootfs(deleted), join(trash, 'rootfs')).catch(ignoreMissing);
          }
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
   * steps or kept for a pod of a removed image, and `tmp/` debris of killed imports. Skips
   * (ran: false) while any import or removal is under way in any process, since their blobs are
   * not referenced yet. Never removes a blob a record references, a blob pushed or pulled within
   * the grace period (its manifest may still come), or a rootfs a live pod uses.
   */
  async gc(options: GcOptions = {}): Promise<GcResult> {
    const lease = await this.#locks.tryHoldForGc();
    if (lease === undefined) return { ran: false, blobsRemoved: 0, rootfsRemoved: 0, tmpRemoved: 0 };
    try {
      const tmpRemoved = await this.#locks.sweepTmp();
      const inUse = await rootfsInUse(this.dataDir);
      const pending = await pendingBlobs(this.#layout, options.pendingGraceMs ?? defaultPendingGraceMs);
      return await this.#locks.withNamesLock(async () => {
        const records = this.#records();
        // Blobs are kept by an image record (berth's runnable view) or a pushed manifest.
        const liveDigests = [
          ...records.flatMap((r) => recordBlobs(r)),
          ...pushedBlobs(this.#layout, this.repositories),
        ];
        const live = new Set(liveDigests.map((d) => parseBlobDigest(d).hex));
        const ids = new Set(records.map((r) => digestHex(r.id)));
        let blobsRemoved = 0;
        let bytesRemoved = 0;
        let pendingKept = 0;
        for (const { dir } of this.#layout.blobDirs()) {
          for (const hex of await readdir(dir).catch(() => [] as string[])) {
            if (live.has(hex)) continue;
            if (pending.has(hex)) {
              pendingKept += 1;
              continue;
            }
            const path = join(dir, hex);
            bytesRemoved += statSync(path, { throwIfNoEntry: false })?.size ?? 0;
            await rm(path, { force: true });
            blobsRemoved += 1;
          }
        }
        await this.repositories.pruneBlobLinks();
        let rootfsRemoved = 0;
        let rootfsKept = 0;
        for (const hex of await readdir(this.#layout.rootfsDir)) {
          if (ids.has(hex)) continue;
          if (inUse.has(hex)) {
            rootfsKept += 1;
            continue;
          }
          await rm(join(this.#layout.rootfsDir, hex), { recursive: true, force: true });
          rootfsRemoved += 1;
        }
        return {
          ran: true,
          blobsRemoved,
          rootfsRemoved,
          tmpRemoved,
          bytesRemoved,
          pendingKept,
          rootfsInUse: rootfsKept,
        };
      });
    } finally {
      lease.release();
    }
  }

  /**
   * Keeps blobs through gc for the grace period although nothing references them any more: what
   * a deleted manifest named, which a cell may be pulling right now.
   */
  async keepForGrace(digests: readonly string[]): Promise<void> {
    for (const digest of digests) if (this.hasBlob(digest)) await markPending(this.#layout, digest);
  }

  /** Removes the pushed registry tags of these `name:tag`s: an imported or removed name wins. */
  async #dropPushedTags(names: readonly string[]): Promise<void> {
    for (const full of names) {
      const colon = full.lastIndexOf(':');
      await this.repositories.deleteTag(full.slice(0, colon), full.slice(colon + 1));
    }
  }

  /** Path of a blob in the store (whether or not it is there), for the registry to serve. */
  blobPath(digest: string): string {
    return this.#layout.blob(digest);
  }

  hasBlob(digest: string): boolean {
    return existsSync(this.#layout.blob(digest));
  }

  /** The blob writer (and node:crypto with it) loads only for imports, off the pod hot path. */
  async #deps(): Promise<{ layout: StoreLayout; blobs: BlobStore; locks: StoreLocks }> {
    const { BlobStore } = await import('./blob-store.js');
    return { layout: this.#layout, blobs: new BlobStore(this.#layout), locks: this.#locks };
  }

  #records(): ImageRecord[] {
    return readdirSync(this.#layout.records)
      .filter((f) => /^[a-f0-9]{64}\.json$/.test(f))
      .map((f) => readRecord(this.#layout, `sha256:${f.slice(0, 64)}`))
      .filter((r): r is ImageRecord => r !== undefined);
  }

  /** name:tag, short name (`busybox` for `docker.io/library/busybox:latest`), id, id prefix. */
  #find(ref: string, names: NamesIndex): Found {
    if (ref.startsWith('sha256:')) {
      if (isDigest(ref)) return { id: ref };
      return this.#findByPrefix(ref, ref.slice('sha256:'.length));
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
    if (hexPrefix.test(ref)) return this.#findByPrefix(ref, ref);
    throw new NotFoundError('image', ref);
  }

  #findByPrefix(ref: string, prefix: string): Found {
    if (!hexPrefix.test(prefix)) throw new NotFoundError('image', ref);
    const matches = readdirSync(this.#layout.records).filter(
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

function manifestOf(record: ImageRecord): StoredManifest {
  return { digest: record.manifestDigest, mediaType: record.manifestMediaType, id: record.id };
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
