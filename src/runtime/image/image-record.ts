import { readFileSync } from 'node:fs';
import { errnoCode } from '../../core/index.js';
import type { ImageRuntimeConfig } from './image-types.js';
import { writeStoreFile } from './store-files.js';
import type { StoreLayout } from './store-layout.js';

export interface LayerRecord {
  /** Digest of the layer blob as stored (compressed or not). */
  readonly digest: string;
  readonly mediaType: string;
  readonly size: number;
  /** sha256 of the uncompressed layer tar, as the config's rootfs.diff_ids lists it. */
  readonly diffId: string;
}

/** One image as the store keeps it, in `records/<id hex>.json`. Names live in the names index. */
export interface ImageRecord {
  readonly id: string;
  readonly manifestDigest: string;
  readonly manifestMediaType: string;
  readonly configDigest: string;
  readonly layers: readonly LayerRecord[];
  readonly size: number;
  readonly created: string;
  readonly architecture: string;
  readonly os: string;
  readonly config: ImageRuntimeConfig;
}

export function readRecord(layout: StoreLayout, id: string): ImageRecord | undefined {
  try {
    return JSON.parse(readFileSync(layout.record(id), 'utf8')) as ImageRecord;
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return undefined;
    throw err;
  }
}

export function writeRecord(layout: StoreLayout, record: ImageRecord): Promise<void> {
  return writeStoreFile(layout, layout.record(record.id), `${JSON.stringify(record, null, 2)}\n`);
}

/** Every blob an image keeps alive: its manifest, config and layers. */
export function recordBlobs(record: ImageRecord): string[] {
  return [record.manifestDigest, record.configDigest, ...record.layers.map((l) => l.digest)];
}
