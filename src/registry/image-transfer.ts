import { readFile } from 'node:fs/promises';
import { InvalidArgumentError } from '../core/index.js';
import {
  type ImageStore,
  type ImageSummary,
  indexTypes,
  manifestTypes,
  normalizeImageName,
} from '../runtime/image/index.js';
import {
  type Descriptor,
  formatPlatform,
  hostPlatform,
  indexPlatforms,
  type Platform,
  platformDescriptor,
} from './platform-choice.js';
import type { BlobProgress, FetchedManifest, RegistryClient } from './registry-client.js';
import type { RemoteReference } from './remote-reference.js';

export { type Descriptor, hostArchitecture, indexPlatforms, platformDescriptor } from './platform-choice.js';

/** What a transfer reports as it goes: the blobs to move (once), then bytes per blob. */
export interface TransferProgress {
  readonly onBlobs?: (blobs: readonly Descriptor[]) => void;
  readonly onBytes?: BlobProgress;
}

export interface TransferResult {
  /** `name:tag` on the registry (push) or in the local store (pull). */
  readonly name: string;
  readonly manifestDigest: string;
  /** Blobs sent or fetched, and blobs the other side already had. */
  readonly blobsCopied: number;
  readonly blobsSkipped: number;
  readonly bytesCopied: number;
}

export interface PullResult extends TransferResult {
  readonly image: ImageSummary;
}

/** Splits a normalized `repo:tag`. */
export function splitName(name: string): { repository: string; tag: string } {
  const colon = name.lastIndexOf(':');
  return { repository: name.slice(0, colon), tag: name.slice(colon + 1) };
}

function parseManifest(bytes: Buffer, what: string): Record<string, unknown> {
  try {
    const doc = JSON.parse(bytes.toString('utf8')) as unknown;
    if (typeof doc === 'object' && doc !== null && !Array.isArray(doc)) return doc as Record<string, unknown>;
  } catch {
    // reported below
  }
  throw new InvalidArgumentError(`${what} is not a JSON object`);
}

/** The config and layer descriptors of an image manifest, config first. */
function blobsOf(doc: Record<string, unknown>, what: string): Descriptor[] {
  const list = [doc.config, ...(Array.isArray(doc.layers) ? doc.layers : [])] as (Descriptor | undefined)[];
  return list.map((d, i) => {
    if (typeof d?.digest !== 'string' || typeof d.size !== 'number') {
      throw new InvalidArgumentError(`${what} has an invalid descriptor at position ${i}`);
    }
    return d;
  });
}

/**
 * Pushes a local image to a registry as `remote` (a NAME:TAG of the client's registry, or a parsed
 * reference naming another registry's repository and tag): every blob the registry lacks (checked
 * with HEAD), then the manifest exactly as the store holds it, so the digest is the same on both
 * sides.
 */
export async function pushImage(
  store: ImageStore,
  client: RegistryClient,
  localRef: string,
  remote: string | RemoteReference = localRef,
  progress: TransferProgress = {},
): Promise<TransferResult> {
  const target = typeof remote === 'string' ? localReference(remote) : remote;
  const repository = target.repository;
  const tag = target.reference;
  const name = target.localName ?? `${repository}:${tag}`;
  const image = await store.resolve(localRef);
  const stored = store.manifestByDigest(image.manifestDigest);
  const mediaType = stored?.mediaType ?? '';
  const bytes = await readFile(store.blobPath(image.manifestDigest));
  const blobs = blobsOf(parseManifest(bytes, `the manifest of ${localRef}`), `the manifest of ${localRef}`);
  let blobsCopied = 0;
  let bytesCopied = 0;
  progress.onBlobs?.(blobs);
  // Layers first, config last: a registry that sees the config knows the upload is nearly done.
  for (const blob of [...blobs.slice(1), ...blobs.slice(0, 1)]) {
    const outcome = await client.pushBlob(
      repository,
      blob.digest,
      store.blobPath(blob.digest),
      progress.onBytes,
    );
    if (outcome === 'pushed') {
      blobsCopied += 1;
      bytesCopied += blob.size;
    } else {
      progress.onBytes?.(blob.digest, blob.size);
    }
  }
  const manifestDigest = await client.putManifest(repository, tag, bytes, mediaType);
  return { name, manifestDigest, blobsCopied, blobsSkipped: blobs.length - blobsCopied, bytesCopied };
}

/** How deep indexes may nest (an index of indexes of manifests is already unusual). */
/** Blobs fetched at once by a pull (skopeo and containerd default to a few, too). */
const parallelBlobs = 3;

const maxIndexDepth = 4;

/**
 * Narrows an index (manifest list, maybe nested) to the manifest for `platform`; a missing
 * platform is an error naming what the index offers, never another platform's image.
 */
async function platformManifest(
  client: RegistryClient,
  repository: string,
  fetched: FetchedManifest,
  platform: Platform,
  depth = 0,
): Promise<FetchedManifest> {
  const doc = parseManifest(fetched.bytes, `the index ${fetched.digest}`);
  const chosen = platformDescriptor(doc, platform);
  if (chosen === undefined) {
    throw new InvalidArgumentError(
      `the index ${fetched.digest} has no image for ${formatPlatform(platform)} (it has ${indexPlatforms(doc)}); choose one with --platform`,
      { platform: formatPlatform(platform), offered: indexPlatforms(doc) },
    );
  }
  const child = await client.getManifest(repository, chosen.digest);
  if (!indexTypes.has(child.mediaType)) return child;
  if (depth >= maxIndexDepth) {
    throw new InvalidArgumentError(`the index ${fetched.digest} nests indexes deeper than ${maxIndexDepth}`);
  }
  return platformManifest(client, repository, child, platform, depth + 1);
}

export interface PullOptions extends TransferProgress {
  /** The platform to take from an index; the host's by default. */
  readonly platform?: Platform;
}

/**
 * Pulls `ref` into the store: a `NAME[:TAG]` of the client's registry as the store names it, or
 * a parsed reference (another registry's repository, by tag or digest). The manifest the tag or
 * digest names (its digest checked; from an index, the platform's manifest), then every config and
 * layer blob the store lacks, verified while it streams, then the import of the manifest, which
 * checks diff_ids and flattens the rootfs. A digest-only reference imports an unnamed image.
 */
export async function pullImage(
  store: ImageStore,
  client: RegistryClient,
  ref: string | RemoteReference,
  options: PullOptions = {},
): Promise<PullResult> {
  const target = typeof ref === 'string' ? localReference(ref) : ref;
  const { repository } = target;
  let fetched = await client.getManifest(repository, target.reference);
  if (indexTypes.has(fetched.mediaType)) {
    fetched = await platformManifest(client, repository, fetched, options.platform ?? hostPlatform());
  }
  const label = target.localName ?? `${repository}@${target.reference}`;
  const what = `the manifest of ${label} (${fetched.digest})`;
  const doc = parseManifest(fetched.bytes, what);
  if (!isImageConfig(doc) || (fetched.mediaType !== '' && !manifestTypes.has(fetched.mediaType))) {
    throw new InvalidArgumentError(
      `${label} is not a runnable image: its manifest is ${fetched.mediaType || 'untyped'}${typeof doc.artifactType === 'string' ? ` (an artifact of type ${doc.artifactType})` : ''}`,
      { mediaType: fetched.mediaType },
    );
  }
  const blobs = blobsOf(doc, what);
  let blobsCopied = 0;
  let bytesCopied = 0;
  const missing = blobs.filter((blob) => !store.hasBlob(blob.digest));
  options.onBlobs?.(missing);
  // A few blobs at a time, as skopeo and containerd pull: one stream rarely fills the link.
  const queue = [...missing];
  const worker = async () => {
    for (let blob = queue.shift(); blob !== undefined; blob = queue.shift()) {
      const stream = await client.getBlob(repository, blob.digest, blob.size, options.onBytes);
      // getBlob's stream fails unless the bytes hash to the digest: the store need not hash again.
      await store.putBlob(stream, { digest: blob.digest, size: blob.size }, undefined, {
        verifiedStream: true,
      });
      blobsCopied += 1;
      bytesCopied += blob.size;
    }
  };
  await Promise.all(Array.from({ length: Math.min(parallelBlobs, missing.length) }, worker));
  const image = await store.importManifest(
    fetched.bytes,
    fetched.mediaType,
    target.localName === undefined ? {} : { name: target.localName },
  );
  return {
    name: target.localName ?? label,
    manifestDigest: fetched.digest,
    blobsCopied,
    blobsSkipped: blobs.length - blobsCopied,
    bytesCopied,
    image,
  };
}

/** A `NAME[:TAG]` of the client's own registry, stored under that same name. */
function localReference(ref: string): RemoteReference {
  const name = normalizeImageName(ref);
  const { repository, tag } = splitName(name);
  return { registry: undefined, repository, reference: tag, digest: undefined, localName: name };
}

/**
 * Only image manifests run: an artifact (a Helm chart, a signature, an SBOM) is an OCI manifest
 * too, told apart by its config's media type.
 */
const imageConfigTypes: ReadonlySet<string> = new Set([
  'application/vnd.oci.image.config.v1+json',
  'application/vnd.docker.container.image.v1+json',
]);

function isImageConfig(doc: Record<string, unknown>): boolean {
  const config = doc.config as { mediaType?: unknown } | undefined;
  return typeof config?.mediaType === 'string' && imageConfigTypes.has(config.mediaType);
}
