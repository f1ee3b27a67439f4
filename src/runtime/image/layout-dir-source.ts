import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { InvalidArgumentError } from '../../core/index.js';
import type { ImageSource, SourceFile } from './image-source.js';
import { archivePathComponents } from './in-root-path.js';

/** An OCI image-layout directory on disk, read in place (its blobs are copied and hashed). */
export class LayoutDirSource implements ImageSource {
  constructor(readonly description: string) {}

  #resolve(path: string): string | undefined {
    // Paths come from the layout's own JSON; `..` there is an attempt to read outside it.
    const components = archivePathComponents(path);
    if (components === null || components.length === 0) return undefined;
    return join(this.description, ...components);
  }

  has(path: string): boolean {
    const full = this.#resolve(path);
    return full !== undefined && existsSync(full);
  }

  async file(path: string): Promise<SourceFile> {
    const full = this.#resolve(path);
    const stat = full === undefined ? undefined : statSync(full, { throwIfNoEntry: false });
    if (full === undefined || stat === undefined || !stat.isFile()) {
      throw new InvalidArgumentError(
        `Cannot import "${this.description}": the layout has no file "${path}"`,
        {
          path,
        },
      );
    }
    return { path: full, size: stat.size, staged: false };
  }
}
