/**
 * The image store of the runtime: content-addressed OCI images under `<data dir>/images`.
 * `openImageStore` is cheap (mkdir only) and loads no tar or zlib code: the pod hot path calls it.
 */

import { ImageStore } from './image-store.js';
import type { UncompressedDigester } from './uncompressed-digest.js';

export type { StoredBlob } from './blob-store.js';
export { type DigestAlgorithm, digestAlgorithm, digestHex, isBlobDigest, isDigest } from './digest.js';
export { isImageName, normalizeImageName } from './image-reference.js';
export type { GcOptions, GcResult, HashedFile, RemoveResult, StoredManifest } from './image-store.js';
export type { ImageRuntimeConfig, ImageSummary, ResolvedImage } from './image-types.js';
export {
  configTypes,
  dockerManifest,
  dockerManifestList,
  indexTypes,
  manifestTypes,
  ociIndex,
  ociManifest,
} from './media-types.js';
export { hostArchitecture } from './oci-layout-reader.js';
export type { ManifestDescriptor, ManifestLink, Repositories } from './repositories.js';
export type { UncompressedDigester } from './uncompressed-digest.js';
export { ImageStore };
/** A digester of a blob's uncompressed bytes if `head` starts a gzip stream (zlib loaded on demand). */
export async function uncompressedDigester(head: Uint8Array): Promise<UncompressedDigester | undefined> {
  const { UncompressedDigester } = await import('./uncompressed-digest.js');
  return UncompressedDigester.forHead(head);
}
export function openImageStore(dataDir: string): ImageStore {
  return new ImageStore(dataDir);
}
