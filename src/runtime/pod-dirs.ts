import { join } from 'node:path';
import type { PodPhase } from './pod-state.js';

/** The on-disk layout of the runtime under the data dir (`--dir`, `$BERTH_DIR`). */
export interface RuntimeDirs {
  readonly root: string;
  readonly pods: string;
  /** runc's own state (`runc --root`), kept inside berth's data dir so gc can clean it. */
  readonly runc: string;
}

export function runtimeDirs(dataDir: string): RuntimeDirs {
  return { root: dataDir, pods: join(dataDir, 'pods'), runc: join(dataDir, 'runc') };
}

export function phaseDir(dirs: RuntimeDirs, phase: PodPhase): string {
  return join(dirs.pods, phase);
}

export function podDir(dirs: RuntimeDirs, phase: PodPhase, uuid: string): string {
  return join(dirs.pods, phase, uuid);
}

/** Files inside a pod directory. The pod directory is also the OCI bundle. */
export const podFiles = {
  manifest: 'pod.json',
  ociConfig: 'config.json',
  rootfs: 'rootfs',
  upper: 'upper',
  work: 'work',
  log: 'log',
  started: 'started.json',
  exit: 'exit.json',
  pid: 'pid',
  holderPid: 'holder.pid',
  network: 'network.json',
  hosts: 'hosts',
  hostname: 'hostname',
  resolvConf: 'resolv.conf',
  /** Host-written files the container sees read-only at the manifest's `sharedDir`. */
  shared: 'shared',
  /**
   * Present once the pod's end is in the container history: no obituary needed. A hard link to
   * exit.json, not a file of its own: only its existence counts, and a link is a directory entry
   * where a new file is also an inode (on the development machine's ext4, 10 µs against 600 µs,
   * which `gc` pays once per exited pod).
   */
  historyNoted: 'history-noted',
  /** A pod of several apps: each app's end so far (AppExit[]), rewritten as each ends. */
  appExits: 'apps.json',
  /** The bundles of a pod's apps after the first (pod-apps.ts). */
  apps: 'apps',
  /** Volumes of kind `empty`, one directory each (pod-volumes.ts). */
  volumes: 'volumes',
} as const;

/** An app's OCI config in its pod: the pod dir's own for the first app, `apps/<name>/` for others. */
export function appOciConfigPath(podPath: string, appBundle: string): string {
  return join(podPath, appBundle, podFiles.ociConfig);
}

/** Where `destroy` leaves a short record of pods removed before their end reached the history. */
export const obituariesDir = 'pod-obituaries';

/** Where a volume of kind `empty` lives in its pod dir (a tmpfs is mounted there by stage 1). */
export function emptyVolumeDir(podPath: string, name: string): string {
  return join(podPath, podFiles.volumes, name);
}
