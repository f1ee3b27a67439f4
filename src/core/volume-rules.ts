/**
 * What a volume may be called and where it may be mounted: one rule for the runtime's flags
 * (`--volume`, `--mount`, `-v`), the BBS's DesiredLRPs and tasks, and a system's services, so a
 * name or target the cluster accepts is one a cell's runtime accepts too.
 */
import { posix } from 'node:path';

/** A volume name: letters, digits, "_", "." and "-", at most 63 (a directory name on the cell). */
export const volumeNamePattern = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/;

/** Container paths no volume may cover: the kernel's views and the devices the runtime mounts itself. */
export const reservedMountTargets: readonly string[] = ['/proc', '/sys', '/dev'];

/**
 * Why a container path cannot take a volume, or undefined when it can: it must be absolute,
 * plain (no `.` or `..` parts), not `/`, and not over a reserved path.
 */
export function mountTargetProblem(target: string): string | undefined {
  const plain = posix.normalize(target);
  if (!target.startsWith('/') || target.split('/').some((p) => p === '..' || p === '.') || plain === '/')
    return `"${target}": expected an absolute path other than /, without "." or ".." parts`;
  const reserved = reservedMountTargets.find((r) => plain === r || plain.startsWith(`${r}/`));
  if (reserved !== undefined) return `"${target}": ${reserved} is the kernel's, not the app's`;
  return undefined;
}

/** A valid target in one spelling (`/data/` and `/data` are one target). */
export function plainMountTarget(target: string): string {
  return posix.normalize(target).replace(/(.)\/$/, '$1');
}
