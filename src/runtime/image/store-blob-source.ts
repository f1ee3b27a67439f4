import { statSync } from 'node:fs';
import { InvalidArgumentError } from '../../core/index.js';
import type { ImageSource, SourceFile } from './image-source.js';
import type { StoreLayout } from './store-layout.js';

const blobPathPattern = /^blobs\/sha256\/([a-f0-9]{64})$/;

/**
 * An OCI layout made of blobs already in the store (pushed to the registry or pulled from one)
 * plus a few documents of the caller's (`index.json`, the manifest being imported). It lets a
 * pushed manifest go through exactly the reader and importer an OCI layout import uses. Store
 * blobs were verified when written, so `BlobStore.ingest` adopts them without copying.
 */
export class StoreBlobSource implements ImageSource {
  readonly #layout: StoreLayout;
  /** Archive-relative path → a file of the caller's (never renamed: `staged` is false). */
  readonly #extra: ReadonlyMap<string, string>;

  constructor(
    layout: StoreLayout,
    readonly description: string,
    extra: ReadonlyMap<string, string>,
  ) {
    this.#layout = layout;
    this.#extra = extra;
  }

  #resolve(path: string): string | undefined {
    const own = this.#extra.get(path);
    if (own !== undefined) return own;
    const hex = blobPathPattern.exec(path)?.[1];
    return hex === undefined ? undefined : this.#layout.blob(`sha256:${hex}`);
  }

  has(path: string): boolean {
    const full = this.#resolve(path);
    return full !== undefined && statSync(full, { throwIfNoEntry: false })?.isFile() === true;
  }

  async file(path: string): Promise<SourceFile> {
    const full = this.#resolve(path);
    const stat = full === undefined ? undefined : statSync(full, { throwIfNoEntry: false });
    if (full === undefined || stat === undefined || !stat.isFile()) {
      const digest = blobPathPattern.exec(path)?.[1];
      throw new InvalidArgumentError(
        digest === undefined
          ? `${this.description} has no file "${path}"`
          : `the blob sha256:${digest} is not in the store`,
        { path },
      );
    }
    return { path: full, size: stat.size, staged: false };
  }
}
