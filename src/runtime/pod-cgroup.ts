import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Each pod has a cgroup of its own, `/berth/<uuid>`, which berth creates and removes, and runc
 * puts the app in a child of it, `/berth/<uuid>/app`. Both carry the memory limit, so what an
 * out-of-memory kill leaves behind (v2 `memory.events`, hierarchical; v1 the usage high-water
 * mark) can still be read in the pod's cgroup after `runc run` has deleted the app's on exit: an
 * exit status of 137 alone cannot tell the kernel's OOM kill from a `kill -9`.
 */
const cgroupRoot = '/sys/fs/cgroup';

/** An app's cgroup inside the pod's (OCI `linux.cgroupsPath`); the first app's is `app`. */
export function appCgroupPath(uuid: string, sideApp?: string): string {
  return sideApp === undefined ? `/berth/${uuid}/app` : `/berth/${uuid}/app-${sideApp}`;
}

function isV2(): boolean {
  return existsSync(join(cgroupRoot, 'cgroup.controllers'));
}

/** The directory holding every pod's cgroup (the memory hierarchy's on cgroup v1). */
export function podCgroupsParent(): string {
  return isV2() ? join(cgroupRoot, 'berth') : join(cgroupRoot, 'memory', 'berth');
}

function memoryDir(uuid: string): string {
  return join(podCgroupsParent(), uuid);
}

/**
 * Creates the pod's cgroup with the app's memory limit (swap included: none beyond it). Best
 * effort, never throws: inside a container the v2 controllers may not be delegable, and runc
 * enforces the same limit on the app's cgroup anyway; only OOM detection is lost then.
 */
export function preparePodCgroup(uuid: string, memoryBytes: number | null): void {
  const attempt = (fn: () => void) => {
    try {
      fn();
    } catch {
      // See above: the limit on the app's own cgroup still holds.
    }
  };
  if (isV2()) {
    // Controllers must be enabled on the way down for memory.max to exist in the pod's cgroup.
    attempt(() => enableV2Controllers(cgroupRoot));
    attempt(() => mkdirSync(join(cgroupRoot, 'berth'), { recursive: true }));
    attempt(() => enableV2Controllers(join(cgroupRoot, 'berth')));
    const dir = join(cgroupRoot, 'berth', uuid);
    attempt(() => mkdirSync(dir, { recursive: true }));
    if (memoryBytes !== null) {
      attempt(() => writeFileSync(join(dir, 'memory.max'), String(memoryBytes)));
      attempt(() => writeFileSync(join(dir, 'memory.swap.max'), '0'));
    }
    return;
  }
  const dir = memoryDir(uuid);
  attempt(() => mkdirSync(dir, { recursive: true }));
  if (memoryBytes !== null) {
    attempt(() => writeFileSync(join(dir, 'memory.limit_in_bytes'), String(memoryBytes)));
    attempt(() => writeFileSync(join(dir, 'memory.memsw.limit_in_bytes'), String(memoryBytes)));
  }
}

function enableV2Controllers(dir: string): void {
  const available = readFileSync(join(dir, 'cgroup.controllers'), 'utf8').split(/\s+/);
  const wanted = ['memory', 'pids'].filter((c) => available.includes(c));
  const enabled = readFileSync(join(dir, 'cgroup.subtree_control'), 'utf8').split(/\s+/);
  const missing = wanted.filter((c) => !enabled.includes(c));
  if (missing.length > 0)
    writeFileSync(join(dir, 'cgroup.subtree_control'), missing.map((c) => `+${c}`).join(' '));
}

/**
 * Whether this machine lets berth read OOM kills: cgroup v1 with the memory controller, or v2
 * where the memory controller could be enabled below `/berth` (not always so inside a container).
 * Meaningful once a pod has run.
 */
export function oomDetectable(): boolean {
  if (!isV2()) return existsSync(join(cgroupRoot, 'memory'));
  try {
    return readFileSync(join(cgroupRoot, 'berth', 'cgroup.subtree_control'), 'utf8')
      .split(/\s+/)
      .includes('memory');
  } catch {
    return false;
  }
}

/** Whether the pod's cgroup (or part of it) is still there: one stat, for gc's sweep. */
export function podCgroupExists(uuid: string): boolean {
  return existsSync(memoryDir(uuid));
}

function readNumber(path: string): number {
  try {
    return Number(readFileSync(path, 'utf8').trim()) || 0;
  } catch {
    return 0;
  }
}

/**
 * Whether the kernel OOM-killed the app, read from the pod's cgroup after the app ended:
 * - cgroup v2: `memory.events` `oom_kill` (hierarchical, so the app's own cgroup being gone does
 *   not matter) — exact.
 * - cgroup v1: the kill is counted only in the app's cgroup, which runc has deleted by now, so
 *   berth reads the pod cgroup's high-water mark instead (`memory.max_usage_in_bytes`): the usage
 *   reached the limit and the app died of SIGKILL (status 137). With swap capped at the limit,
 *   that is the OOM killer; the one thing it cannot tell apart is a `kill -9` sent after the app
 *   once touched its limit.
 */
export function podOutOfMemory(uuid: string, exitCode: number | null): boolean {
  const dir = memoryDir(uuid);
  if (isV2()) {
    try {
      return Number(/^oom_kill (\d+)$/m.exec(readFileSync(join(dir, 'memory.events'), 'utf8'))?.[1] ?? 0) > 0;
    } catch {
      return false;
    }
  }
  if (exitCode !== 137) return false;
  const oomControl = (() => {
    try {
      return readFileSync(join(dir, 'memory.oom_control'), 'utf8');
    } catch {
      return '';
    }
  })();
  if (Number(/^oom_kill (\d+)$/m.exec(oomControl)?.[1] ?? 0) > 0) return true;
  // `failcnt` stays 0 on current kernels when the charge fails in a child; the high-water mark
  // reaching the limit is what remains.
  const limit = readNumber(join(dir, 'memory.limit_in_bytes'));
  return limit > 0 && readNumber(join(dir, 'memory.max_usage_in_bytes')) >= limit;
}

/**
 * Removes the pod's cgroup in every hierarchy (v1: runc made `/berth/<uuid>` in each controller on
 * its way to `app`). Best effort: a cgroup that still has processes stays, and gc tries again.
 */
export function removePodCgroup(uuid: string): void {
  // The memory dir goes last: while it exists, `podCgroupExists` tells gc there is more to remove.
  const dirs = isV2()
    ? [join(cgroupRoot, 'berth', uuid)]
    : [
        ...readdirSync(cgroupRoot)
          .filter((controller) => controller !== 'memory')
          .map((controller) => join(cgroupRoot, controller, 'berth', uuid)),
        memoryDir(uuid),
      ];
  for (const dir of dirs) {
    removeCgroupDir(join(dir, 'app'));
    // A pod of several apps has `app-<name>` cgroups beside `app`, and the pod's cgroup stays busy
    // until they go: only then is the dir read (single-app pods, the common case, skip the read).
    if (!removeCgroupDir(dir)) {
      for (const child of sideAppCgroups(dir)) removeCgroupDir(join(dir, child));
      removeCgroupDir(dir);
    }
  }
}

/** rmdir of one cgroup; false while it is busy (processes in it, or child cgroups in v1). */
function removeCgroupDir(dir: string): boolean {
  try {
    rmdirSync(dir);
    return true;
  } catch (err) {
    // ENOENT: gone already. EBUSY and ENOTEMPTY: gc tries again later.
    return (err as NodeJS.ErrnoException).code === 'ENOENT';
  }
}

/** The cgroups of a pod's apps after the first (`app-<name>`), if the pod had any. */
function sideAppCgroups(dir: string): string[] {
  try {
    return readdirSync(dir).filter((name) => name.startsWith('app-'));
  } catch {
    return []; // no pod cgroup here: nothing below it either
  }
}
