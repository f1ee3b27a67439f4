import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { Transform } from 'node:stream';
import { BerthError, errnoCode, InvalidArgumentError, NotFoundError } from '../../core/index.js';
import { StagedArchive } from './archive-reader.js';
import type { BlobStore } from './blob-store.js';
import { openUncompressed, sniffCompression } from './compression.js';
import { cacheDiffId, cachedDiffId } from './diffid-cache.js';
import { sha256Digest } from './digest.js';
import { planDockerArchive } from './docker-archive-reader.js';
import { parseImageConfig } from './image-config.js';
import type { ImagePlan } from './image-plan.js';
import { type ImageRecord, type LayerRecord, readRecord, writeRecord } from './image-record.js';
import { normalizeImageName } from './image-reference.js';
import type { ImageSource } from './image-source.js';
import type { ImageSummary } from './image-types.js';
import { LayerApplier } from './layer-extractor.js';
import { LayoutDirSource } from './layout-dir-source.js';
import {
  checkLayerMediaType,
  ociConfig,
  ociLayerGzip,
  ociLayerTar,
  ociLayerZstd,
  ociManifest,
} from './media-types.js';
import { readNames, writeNames } from './names-index.js';
import { hostArchitecture, planOciLayout } from './oci-layout-reader.js';
import { packRootfs } from './rootfs-archiver.js';
import { StoreBlobSource } from './store-blob-source.js';
import { makeWorkDir } from './store-files.js';
import type { StoreLayout } from './store-layout.js';
import type { StoreLocks } from './store-locks.js';

/** podman's (and docker's) default PATH, which import-rootfs images carry in their Env. */
const defaultPathEnv = 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

export interface ImporterDeps {
  readonly layout: StoreLayout;
  readonly blobs: BlobStore;
  readonly locks: StoreLocks;
}

/**
 * Every import runs in a private work dir under `tmp/` with the gc lock held shared, and only
 * its last step (publish) touches what readers see. On any failure the work dir goes, so a failed
 * import leaves at most verified blobs nothing references (swept by the next gc).
 */
async function withWorkDir<T>(deps: ImporterDeps, fn: (work: string) => Promise<T>): Promise<T> {
  const lease = await deps.locks.holdForWork();
  let work: string | undefined;
  try {
    work = await makeWorkDir(deps.layout, 'import');
    return await fn(work);
  } finally {
    if (work !== undefined) await rm(work, { recursive: true, force: true });
    lease.release();
  }
}

/** Re-states any failure as "Cannot import X: …", keeping the error's code (and so the exit code). */
function describeFailure(err: unknown, what: string): unknown {
  const prefix = `Cannot import ${what}`;
  if (err instanceof BerthError) {
    if (err.message.startsWith(prefix)) return err;
    return new BerthError(err.code, `${prefix}: ${err.message}`, { ...err.details }, { cause: err });
  }
  const message = err instanceof Error ? err.message : String(err);
  if (errnoCode(err) === 'ENOSPC') return new BerthError('resource_exhausted', `${prefix}: ${message}`);
  return new BerthError('internal', `${prefix}: ${message}`, {}, { cause: err });
}

export async function importArchive(
  deps: ImporterDeps,
  path: string,
  options: { readonly name?: string } = {},
): Promise<ImageSummary> {
  const what = `"${path}"`;
  const wantedName = options.name === undefined ? undefined : normalizeImageName(options.name, '--name');
  const info = await stat(path).catch((err: unknown) => {
    if (errnoCode(err) === 'ENOENT') throw new NotFoundError('file or directory', path);
    throw err;
  });
  try {
    return await withWorkDir(deps, async (work) => {
      const source: ImageSource = info.isDirectory()
        ? new LayoutDirSource(resolve(path))
        : await StagedArchive.stage(path, work);
      let plan: ImagePlan;
      if (source.has('manifest.json')) plan = await planDockerArchive(source, wantedName);
      else if (source.has('index.json')) plan = await planOciLayout(source, wantedName);
      else {
        throw new InvalidArgumentError(
          'it has neither manifest.json (docker-archive) nor index.json (OCI layout / oci-archive)',
        );
      }
      return await install(deps, plan, work);
    });
  } catch (err) {
    throw describeFailure(err, what);
  }
}

/**
 * Imports a manifest (or index) whose blobs are already in the store, as the registry does for a
 * manifest PUT and a pull does after fetching the blobs: the manifest is presented as a one-entry
 * OCI layout, so it is verified, read and flattened by the same code as an OCI layout import.
 */
export interface ManifestImportOptions {
  readonly name?: string;
  /**
   * `on-use`: verify the layers against the config's diff_ids (from the digest cache where the
   * upload computed them) and publish the record and name, but write the rootfs only when
   * something resolves the image (`materializeRootfs`). The registry's push takes this path.
   */
  readonly rootfs?: 'now' | 'on-use';
}

export async function importManifest(
  deps: ImporterDeps,
  manifest: Buffer,
  mediaType: string,
  options: ManifestImportOptions = {},
): Promise<ImageSummary> {
  const digest = sha256Digest(createHash('sha256').update(manifest).digest('hex'));
  const what = `the manifest ${digest}`;
  const wantedName = options.name === undefined ? undefined : normalizeImageName(options.name);
  try {
    return await withWorkDir(deps, async (work) => {
      const manifestFile = join(work, 'manifest.json');
      const indexFile = join(work, 'index.json');
      await writeFile(manifestFile, manifest, { flag: 'wx', mode: 0o600 });
      const index = { schemaVersion: 2, manifests: [{ mediaType, digest, size: manifest.length }] };
      await writeFile(indexFile, JSON.stringify(index), { flag: 'wx', mode: 0o600 });
      const source = new StoreBlobSource(
        deps.layout,
        what,
        new Map([
          ['index.json', indexFile],
          [`blobs/sha256/${digest.slice('sha256:'.length)}`, manifestFile],
        ]),
      );
      return await install(deps, await planOciLayout(source, wantedName), work, options.rootfs ?? 'now');
    });
  } catch (err) {
    throw describeFailure(err, what);
  }
}

export async function importRootfs(deps: ImporterDeps, dir: string, name: string): Promise<ImageSummary> {
  const normalized = normalizeImageName(name, '--name');
  const what = `rootfs "${dir}"`;
  const info = await stat(dir).catch((err: unknown) => {
    if (errnoCode(err) === 'ENOENT') throw new NotFoundError('directory', dir);
    throw err;
  });
  if (!info.isDirectory()) throw new InvalidArgumentError(`Cannot import ${what}: it is not a directory`);
  try {
    return await withWorkDir(deps, async (work) => {
      const layer = await packRootfs(dir, join(work, 'layer.tar'));
      const created = new Date().toISOString();
      const config = {
        created,
        architecture: hostArchitecture(),
        os: 'linux',
        config: { Env: [defaultPathEnv], Cmd: ['/bin/sh'] },
        rootfs: { type: 'layers', diff_ids: [layer.digest] },
        history: [{ created, created_by: `berth image import-rootfs ${dir}` }],
      };
      const configPath = join(work, 'config.json');
      const configBytes = Buffer.from(JSON.stringify(config));
      await writeFile(configPath, configBytes, { flag: 'wx', mode: 0o600 });
      const configFile = {
        path: configPath,
        size: configBytes.length,
        digest: sha256Digest(createHash('sha256').update(configBytes).digest('hex')),
        staged: true,
      };
      return await install(
        deps,
        {
          config: { file: configFile, what: 'the image config', mediaType: ociConfig },
          layers: [{ file: layer, what: 'the rootfs layer', mediaType: ociLayerTar }],
          names: [normalized],
        },
        work,
      );
    });
  } catch (err) {
    throw describeFailure(err, what);
  }
}

/**
 * Extracts a layer into `applier`'s root (when given) and returns the sha256 of its uncompressed
 * tar, computed on the way; nothing when `hash` is false (a layer whose diff_id is already known
 * to be right: hashing it again would cost a pass over every uncompressed byte).
 */
async function applyLayer(blobPath: string, what: string, applier: LayerApplier | undefined): Promise<string>;
async function applyLayer(
  blobPath: string,
  what: string,
  applier: LayerApplier,
  hash: false,
): Promise<undefined>;
async function applyLayer(
  blobPath: string,
  what: string,
  applier: LayerApplier | undefined,
  hash = true,
): Promise<string | undefined> {
  const hasher = hash ? createHash('sha256') : undefined;
  const uncompressed = await openUncompressed(blobPath, what);
  // The inflater's own error says what is wrong with the layer; the tar reader downstream may
  // only see its input destroyed, depending on where in an entry the bytes ran out.
  let sourceError: unknown;
  try {
    if (applier === undefined) {
      for await (const chunk of uncompressed) hasher?.update(chunk as Buffer);
    } else {
      const tee = new Transform({
        transform(chunk: Buffer, _encoding, done) {
          hasher?.update(chunk);
          done(null, chunk);
        },
      });
      uncompressed.on('error', (err) => {
        sourceError = err;
        tee.destroy(err);
      });
      uncompressed.pipe(tee);
      await applier.apply(tee, what);
    }
  } catch (caught) {
    const err = sourceError ?? caught;
    const message = err instanceof Error ? err.message : String(err);
    if (err instanceof BerthError) throw err;
    if (
      /Invalid tar header|Unexpected end of data|unexpected end of file|incorrect header check/i.test(message)
    ) {
      const reason = /end of (data|file)/i.test(message) ? 'is truncated' : 'is not a tar archive';
      throw new InvalidArgumentError(`${what} ${reason} (${message})`);
    }
    throw err;
  } finally {
    uncompressed.destroy();
  }
  return hasher === undefined ? undefined : sha256Digest(hasher.digest('hex'));
}

/** A layer's diff_id from the cache, else by inflating and hashing it (and then cached). */
async function layerDiffId(
  layout: StoreLayout,
  blobPath: string,
  digest: string,
  what: string,
): Promise<string> {
  const cached = await cachedDiffId(layout, digest);
  if (cached !== undefined) return cached;
  const computed = await applyLayer(blobPath, what, undefined);
  await cacheDiffId(layout, digest, computed);
  return computed;
}

function diffIdMismatch(what: string, expected: string, actual: string): InvalidArgumentError {
  return new InvalidArgumentError(
    `${what} uncompresses to ${actual}, not the diff_id ${expected} the image config names`,
    { expected, actual },
  );
}

/**
 * Writes the rootfs of an image whose record was published without one (`rootfs: 'on-use'`).
 * Its layers' diff_ids were checked when the record was published (from digests the store
 * computed itself from the same immutable blobs), so they are not hashed again here: that pass
 * over every uncompressed byte was about a fifth of the CPU a push spends after its reply.
 * Concurrent callers (in any process) each build their own and the first rename wins, as for
 * imports.
 */
export async function materializeRootfs(deps: ImporterDeps, record: ImageRecord): Promise<void> {
  const target = deps.layout.rootfs(record.id);
  if (existsSync(target)) return;
  await withWorkDir(deps, async (work) => {
    const rootfs = join(work, 'rootfs');
    await mkdir(rootfs, { mode: 0o755 });
    await extractLayers(deps, record.layers, rootfs, 'checked');
    await deps.locks.withNamesLock(async () => {
      if (readRecord(deps.layout, record.id) === undefined) {
        throw new BerthError(
          'conflict',
          `the image ${record.id} was removed while its rootfs was written; retry`,
        );
      }
      if (!existsSync(target)) await rename(rootfs, target);
    });
  });
}

/**
 * Applies the layers in order into `rootfs`, each checked against its diff_id unless they are
 * `checked` already; then syncs the tree.
 */
async function extractLayers(
  deps: ImporterDeps,
  layers: readonly (LayerRecord & { readonly what?: string })[],
  rootfs: string,
  diffIds: 'check' | 'checked' = 'check',
): Promise<void> {
  const applier = new LayerApplier(rootfs);
  for (const [i, layer] of layers.entries()) {
    const what = layer.what ?? `layer ${i + 1}`;
    const path = deps.blobs.path(layer.digest);
    if (diffIds === 'checked') {
      await applyLayer(path, what, applier, false);
      continue;
    }
    const diffId = await applyLayer(path, what, applier);
    if (diffId !== layer.diffId) throw diffIdMismatch(what, layer.diffId, diffId);
    await cacheDiffId(deps.layout, layer.digest, diffId);
  }
  // The rootfs is written without per-file fsync; one syncfs(2) makes the whole tree durable
  // before it is published. Best effort: a missing `sync -f` only weakens power-loss safety.
  // Asynchronous, so a server's event loop keeps answering while the disk flushes.
  await new Promise<void>((done) => {
    execFile('sync', ['-f', rootfs], () => done());
  });
}

async function install(
  deps: ImporterDeps,
  plan: ImagePlan,
  work: string,
  rootfsMode: 'now' | 'on-use' = 'now',
): Promise<ImageSummary> {
  const { layout, blobs } = deps;
  const config = await blobs.ingest(plan.config.file, plan.config.what, plan.config.expected);
  const id = config.digest;
  const parsed = parseImageConfig(await readFile(blobs.path(id)), plan.config.what);
  if (parsed.diffIds.length !== plan.layers.length) {
    throw new InvalidArgumentError(
      `${plan.config.what} lists ${parsed.diffIds.length} layers (rootfs.diff_ids), the manifest ${plan.layers.length}`,
    );
  }
  const layers: LayerRecord[] = [];
  for (const layer of plan.layers) {
    if (layer.mediaType !== undefined) checkLayerMediaType(layer.mediaType, layer.what);
    const stored = await blobs.ingest(layer.file, layer.what, layer.expected);
    const sniffed = await sniffCompression(blobs.path(stored.digest), layer.what);
    const mediaType =
      layer.mediaType ??
      (sniffed === 'gzip' ? ociLayerGzip : sniffed === 'zstd' ? ociLayerZstd : ociLayerTar);
    layers.push({ ...stored, mediaType, diffId: parsed.diffIds[layers.length] ?? '' });
  }

  // Re-importing an image whose rootfs exists verifies the layers without writing them again;
  // so does a push that defers the rootfs to its first use.
  const published = layout.rootfs(id);
  const rootfs = join(work, 'rootfs');
  const extract = rootfsMode === 'now' && !existsSync(published);
  if (extract) {
    await mkdir(rootfs, { mode: 0o755 });
    await extractLayers(
      deps,
      layers.map((l, i) => ({ ...l, what: plan.layers[i]?.what ?? `layer ${i + 1}` })),
      rootfs,
    );
  } else {
    for (const [i, layer] of layers.entries()) {
      const what = plan.layers[i]?.what ?? `layer ${i + 1}`;
      const diffId = await layerDiffId(layout, blobs.path(layer.digest), layer.digest, what);
      if (diffId !== layer.diffId) throw diffIdMismatch(what, layer.diffId, diffId);
    }
  }

  const manifest = plan.manifest ?? {
    mediaType: ociManifest,
    bytes: Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: ociManifest,
        config: { mediaType: ociConfig, digest: id, size: config.size },
        layers: layers.map((l) => ({ mediaType: l.mediaType, digest: l.digest, size: l.size })),
      }),
    ),
  };
  const manifestBlob = await blobs.write(manifest.bytes);
  const record: ImageRecord = {
    id,
    manifestDigest: manifestBlob.digest,
    manifestMediaType: manifest.mediaType,
    configDigest: id,
    layers,
    size: layers.reduce((sum, l) => sum + l.size, 0),
    created: new Date().toISOString(),
    architecture: parsed.architecture,
    os: parsed.os,
    config: parsed.runtime,
  };
  return publish(deps, record, extract ? rootfs : undefined, plan.names, rootfsMode === 'on-use');
}

/** The one step readers can see: rootfs, record and names appear under the names lock. */
async function publish(
  deps: ImporterDeps,
  record: ImageRecord,
  rootfs: string | undefined,
  names: readonly string[],
  rootfsOnUse = false,
): Promise<ImageSummary> {
  const { layout, locks } = deps;
  return locks.withNamesLock(async () => {
    const target = layout.rootfs(record.id);
    // Another process may have published the same image meanwhile: its rootfs is identical.
    if (rootfs !== undefined && !existsSync(target)) await rename(rootfs, target);
    if (!rootfsOnUse && !existsSync(target)) {
      throw new BerthError(
        'conflict',
        `the image ${record.id} was removed while it was being imported; retry`,
      );
    }
    const existing = readRecord(layout, record.id);
    const kept = existing ?? record;
    if (existing === undefined) await writeRecord(layout, record);
    const index = readNames(layout);
    let changed = false;
    for (const name of names) {
      if (index[name] !== record.id) {
        index[name] = record.id;
        changed = true;
      }
    }
    if (changed) await writeNames(layout, index);
    return {
      id: kept.id,
      names: Object.keys(index)
        .filter((n) => index[n] === kept.id)
        .sort(),
      manifestDigest: kept.manifestDigest,
      size: kept.size,
      created: kept.created,
    };
  });
}
