/**
 * The image store of the runtime: content-addressed OCI images under `<data dir>/images`.
 * `openImageStore` is cheap (mkdir only) and loads no tar or zlib code: the pod hot path calls it.
 */
import { ImageStore } from './image-store.js';

export type { GcResult, RemoveResult } from './image-store.js';
export type { ImageRuntimeConfig, ImageSummary, ResolvedImage } from './image-types.js';
export { ImageStore };

export function openImageStore(dataDir: string): ImageStore {
  return new ImageStore(dataDir);
}
