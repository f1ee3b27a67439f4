import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { BerthError } from '../core/index.js';

/** Characters that would break overlayfs's comma/colon-separated option string. */
const unsafeForOverlay = /[,:\n\\]/;

/**
 * Mounts the pod's root: the image's flattened rootfs read-only below, the pod's own upper dir
 * above, so a container can never modify the image store. Uses mount(8): Node has no mount(2).
 */
export function mountOverlay(lower: string, upper: string, work: string, target: string): void {
  for (const path of [lower, upper, work]) {
    if (unsafeForOverlay.test(path)) {
      throw new BerthError(
        'invalid_argument',
        `Cannot use "${path}" in an overlay mount: it contains , : or \\`,
      );
    }
  }
  const result = spawnSync(
    'mount',
    ['-t', 'overlay', 'overlay', '-o', `lowerdir=${lower},upperdir=${upper},workdir=${work}`, target],
    { encoding: 'utf8' },
  );
  if (result.status !== 0) {
    throw new BerthError(
      'internal',
      `Cannot mount the pod's overlay root at ${target}: ${(result.stderr || result.error?.message || '').trim()}`,
    );
  }
}

/** Every mount point of this mount namespace, decoded from /proc/self/mountinfo. */
export function mountPoints(): string[] {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((p): p is string => p !== undefined)
    .map((p) => p.replace(/\\(\d{3})/g, (_, oct: string) => String.fromCharCode(Number.parseInt(oct, 8))));
}

/** Mount points at or below `dir`, deepest first (the order they must be unmounted in). */
export function mountsUnder(dir: string, points: readonly string[] = mountPoints()): string[] {
  const prefix = dir.endsWith('/') ? dir : `${dir}/`;
  return points.filter((p) => p === dir || p.startsWith(prefix)).sort((a, b) => b.length - a.length);
}

/** Unmounts everything at or below `dir`; lazily when busy, so cleanup never blocks on a user. */
export function unmountAll(dir: string, points?: readonly string[]): void {
  for (const point of mountsUnder(dir, points)) {
    const result = spawnSync('umount', [point], { encoding: 'utf8' });
    if (result.status !== 0) spawnSync('umount', ['-l', point]);
  }
}
