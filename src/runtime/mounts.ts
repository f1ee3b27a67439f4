import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { BerthError } from '../core/index.js';

/** Characters that would break overlayfs's comma/colon-separated option string. */
const unsafeForOverlay = /[,:\n\\]/;

/**
 * The options of the pod's root overlay: the image's flattened rootfs read-only below, the pod's
 * own upper dir above, so a container can never modify the image store. runc mounts it (an OCI
 * mount at "/", see oci-config.ts) inside the container's mount namespace, so it never appears
 * on the host and goes away by itself with the container's last process.
 */
export function overlayOptions(lower: string, upper: string, work: string): string {
  for (const path of [lower, upper, work]) {
    if (unsafeForOverlay.test(path)) {
      throw new BerthError(
        'invalid_argument',
        `Cannot use "${path}" in an overlay mount: it contains , : or \\`,
      );
    }
  }
  return `lowerdir=${lower},upperdir=${upper},workdir=${work}`;
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

/**
 * Unmounts everything at or below `dir`; lazily when busy, so cleanup never blocks on a user.
 * Pods of this berth leave no host mounts; pods started by berth before 2026-11-24 mounted their
 * overlay on the host, and whatever a crash or an operator left is cleaned up here too.
 */
export function unmountAll(dir: string, points?: readonly string[]): void {
  for (const point of mountsUnder(dir, points)) {
    const result = spawnSync('umount', [point], { encoding: 'utf8' });
    if (result.status !== 0) spawnSync('umount', ['-l', point]);
  }
}
