import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { BerthError } from '../core/index.js';

interface BerthNative {
  openConfinedDir(path: string): number;
}

// build/ is beside dist/; this module sits in dist/runtime/ (the pod command bundle gives it
// that same URL), so the addon is two levels up either way.
const addonPath = new URL('../../build/Release/berth_native.node', import.meta.url).pathname;
let addon: BerthNative | undefined;

function loadAddon(): BerthNative {
  if (addon) return addon;
  if (!existsSync(addonPath))
    throw new BerthError(
      'internal',
      `berth's native addon is missing (${addonPath}): run \`npm run build\` in berth's directory`,
    );
  addon = createRequire(import.meta.url)(addonPath) as BerthNative;
  return addon;
}

/**
 * Opens a directory read-only through a private, detached, read-only copy of its mount. On that
 * fd ".." never leaves the directory and nothing can be written: a process given it (the
 * container, which holds its pod's lock fd) cannot reach the rest of the host's filesystem.
 * flock(2) on it is a lock on the directory itself, as on any other fd of it.
 * Errors carry the errno's name as `code` (ENOENT, ENOTDIR …), as Node's fs errors do.
 */
export function openConfinedDirFd(path: string): number {
  return loadAddon().openConfinedDir(path);
}
