import type { PodInfo, PodStore } from '../runtime/index.js';
import { readInLayeredRoot } from '../runtime/index.js';

const resultFileLimit = 10 * 1024;

/**
 * A task's `result_file`: the first 10 KiB of a file in the container's root: its own writes (the
 * pod's overlay upper dir) over the image, or in the volume mounted there (a named volume, or an
 * empty one on disk). Resolved as the container would resolve it, but never out of its root: the
 * container owns every symlink of its upper dir (`ln -s /etc /b` must not make `/b/shadow` the
 * host's), so the path is walked with LayeredRoot, not joined onto host dirs.
 */
export function readResultFile(store: PodStore, pod: PodInfo, file: string): string {
  try {
    const where = store.fileLayers(pod, file);
    const content = where && readInLayeredRoot(where.layers, where.path, resultFileLimit);
    return content?.toString('utf8') ?? '';
  } catch {
    // catch-all: unreadable (gone with the pod, or a file system error): no result, as for a missing file.
    return '';
  }
}
