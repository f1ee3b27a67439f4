import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { errnoCode } from '../core/index.js';
import { netnsDir, netnsName, netnsPath } from './cni-network.js';
import { mountPoints } from './mounts.js';
import { podCgroupExists, podCgroupsParent } from './pod-cgroup.js';
import type { RuntimeDirs } from './pod-dirs.js';

/**
 * What a pod may leave on the host outside its directory, for `destroy` to clean up: mounts (only
 * pods of a berth before 2026-11-24 mounted their root on the host), a named netns, runc's state,
 * a cgroup. One pod asks the host directly; gc's sweep lists each place once and asks the lists,
 * so deleting 10,000 pods costs four directory reads, not 40,000 lookups. A listing is safe to
 * reuse for every pod the sweep then locks: a pod that can be locked has ended, and nothing adds
 * to an ended pod's leftovers.
 */
export interface PodLeftovers {
  readonly mounts: readonly string[] | undefined;
  hasNetns(uuid: string): boolean;
  hasRuncState(uuid: string): boolean;
  hasCgroup(uuid: string): boolean;
}

/** Asks the host, for one pod. */
export function liveLeftovers(dirs: RuntimeDirs): PodLeftovers {
  return {
    mounts: undefined,
    hasNetns: (uuid) => existsSync(netnsPath(uuid)),
    hasRuncState: (uuid) => existsSync(join(dirs.runc, uuid)),
    hasCgroup: (uuid) => podCgroupExists(uuid),
  };
}

/** Lists every place once, for a sweep of many pods. */
export function listedLeftovers(dirs: RuntimeDirs): PodLeftovers {
  const netns = namesIn(netnsDir);
  const runcStates = namesIn(dirs.runc);
  const cgroups = namesIn(podCgroupsParent());
  return {
    mounts: mountPoints(),
    hasNetns: (uuid) => netns.has(netnsName(uuid)),
    hasRuncState: (uuid) => runcStates.has(uuid),
    hasCgroup: (uuid) => cgroups.has(uuid),
  };
}

function namesIn(dir: string): ReadonlySet<string> {
  try {
    return new Set(readdirSync(dir));
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return new Set();
    throw err;
  }
}
