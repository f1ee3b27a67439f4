import { readFile } from 'node:fs/promises';
import { InvalidArgumentError } from '../core/index.js';
import {
  type ImageStore,
  type ImageSummary,
  indexTypes,
  manifestTypes,
  normalizeImageName,
} from '../runtime/image/index.js';
import type { FetchedManifest, RegistryClient } from './registry-client.js';

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

export interface Descriptor {
  readonly digest: string;
  readonly size: number;
  readonly mediaType?: string;
  readonly platform?: { readonly os?: string; readonly architecture?: string };
}

/** Splits a normalized `repo:tag`. */
export function splitName(name: string): { repository: string; tag: string } {
  const colon = name.lastIndexOf(':');
  return { repository: name.slice(0, colon), tag: name.slice(colon + 1) };
}

/** Go's GOARCH names, which OCI platforms use, for node's process.arch. */
export function hostArchitecture(): string {
  const map: Readonly<Record<string, string>> = { x64: 'amd64', ia32: '386', ppc64: 'ppc64le' };
  return map[process.arch] ?? process.arch;
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
 * Pushes a local image to a registry as `remoteName` (NAME:TAG): every blob the registry lacks
 * (checked with HEAD), then the manifest exactly as the store holds it, so the digest is the
 * same on both sides.
 */
export async function pushImage(
  store: ImageStore,
  client: RegistryClient,
  localRef: string,
  remoteName: string = localRef,
): Promise<TransferResult> {
  const name = normalizeImageName(remoteName);
  const { repository, tag } = splitName(name);
  const image = await store.resolve(localRef);
  const stored = store.manifestByDigest(image.manifestDigest);
  const mediaType = stored?.mediaType ?? '';
  const bytes = await readFile(store.blobPath(image.manifestDigest));
  const blobs = blobsOf(parseManifest(bytes, `the manifest of ${localRef}`), `the manifest of ${localRef}`);
  let blobsCopied = 0;
  let bytesCopied = 0;
  // Layers first, config last: a registry that sees the config knows the upload is nearly done.
  for (const blob of [...blobs.slice(1), ...blobs.slice(0, 1)]) {
    const outcome = await client.pushBlob(repository, blob.digest, store.blobPath(blob.digest));
    if (outcome === 'pushed') {
      blobsCopied += 1;
      bytesCopied += blob.size;
    }
  }
  const manifestDigest = await client.putManifest(repository, tag, bytes, mediaType);
  return { name, manifestDigest, blobsCopied, blobsSkipped: blobs.length - blobsCopied, bytesCopied };
}

/**
 * The entry of an image index (manifest list) that this host runs: linux/<host arch>, a
 * single-platform manifest. Undefined when there is none.
 */
export function platformDescriptor(index: Record<string, unknown>): Descriptor | undefined {
  const manifests = (Array.isArray(index.manifests) ? index.manifests : []) as Descriptor[];
  const arch = hostArchitecture();
  return manifests.find(
    (m) =>
      m.platform?.os === 'linux' &&
      m.platform.architecture === arch &&
      (m.mediaType === undefined || manifestTypes.has(m.mediaType)),
  );
}

/** What an index offers, for messages: `linux/arm64, linux/s390x`. */
export function indexPlatforms(index: Record<string, unknown>): string {
  const manifests = (Array.isArray(index.manifests) ? index.manifests : []) as Descriptor[];
  return (
    manifests.map((m) => `${m.platform?.os ?? '?'}/${m.platform?.architecture ?? '?'}`).join(', ') || 'none'
  );
}

/** Narrows an index (manifest list) to the manifest for linux/<host arch>. */
async function platformManifest(
  client: RegistryClient,
  repository: string,
  fetched: FetchedManifest,
): Promise<FetchedManifest> {
  const doc = parseManifest(fetched.bytes, `the index ${fetched.digest}`);
  const chosen = platformDescriptor(doc);
  if (chosen === undefined) {
    throw new InvalidArgumentError(
      `the index ${fetched.digest} has no image for linux/${hostArchitecture()} (it has ${indexPlatforms(doc)})`,
    );
  }
  return client.getManifest(repository, chosen.digest);
}

/**
 * Pulls `ref` (NAME[:TAG]) into the store: the manifest the tag points at (its digest checked),
 * then every config and layer blob the store lacks, by digest, each verified while it is written;
 * then the import of a pushed manifest, which checks diff_ids and flattens the rootfs.
 */
export async function pullImage(store: ImageStore, client: RegistryClient, ref: string): Promise<PullResult> {
  const name = normalizeImageName(ref);
  const { repository, tag } = splitName(name);
  let fetched = await client.getManifest(repository, tag);
  if (indexTypes.has(fetched.mediaType)) fetched = await platformManifest(client, repository, fetched);
  const what = `the manifest of ${name} (${fetched.digest})`;
  const blobs = blobsOf(parseManifest(fetched.bytes, what), what);
  let blobsCopied = 0;
  let bytesCopied = 0;
  for (const blob of blobs) {
    if (store.hasBlob(blob.digest)) continue;
    const stream = await client.getBlob(repository, blob.digest);
    await store.putBlob(stream, { digest: blob.digest, size: blob.size });
    blobsCopied += 1;
    bytesCopied += blob.size;
  }
  const image = await store.importManifest(fetched.bytes, fetched.mediaType, { name });
  return {
    name,
    manifestDigest: fetched.digest,
    blobsCopied,
    blobsSkipped: blobs.length - blobsCopied,
    bytesCopied,
    image,
  };
}
