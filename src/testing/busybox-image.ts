import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ResolvedImage } from '../runtime/image/image-types.js';
import { makeBusyboxRootfs } from './busybox-rootfs.js';

/**
 * An image resolver over a plain busybox rootfs, for runtime tests that exercise pods, locks and
 * runc below the image-store seam. The image store itself has its own tests, and the CLI tests
 * run pods from images imported into the real store.
 */
export function busyboxResolver(config: ResolvedImage['config'] = { Cmd: ['/bin/sh'] }): {
  resolve(ref: string): Promise<ResolvedImage>;
  rootfs: string;
} {
  const rootfs = makeBusyboxRootfs(join(mkdtempSync(join(tmpdir(), 'berth-img-')), 'rootfs'));
  return {
    rootfs,
    resolve: async (ref) => ({
      id: 'sha256:0000000000000000000000000000000000000000000000000000000000000000',
      names: [ref],
      manifestDigest: 'sha256:0000000000000000000000000000000000000000000000000000000000000000',
      size: 0,
      created: new Date(0).toISOString(),
      config,
      rootfs,
    }),
  };
}
