/**
 * What stage 1 does for a pod of several apps (and for volumes of kind `empty` on a tmpfs): the
 * namespaces the apps share, the tmpfs mounts, and the pod's exit from its apps' exits.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BerthError, writeFileAtomic } from '../core/index.js';
import { endStdin, type NativeChild, spawnNative } from './native-process.js';
import { shareNamespaces } from './oci-config.js';
import { type PodAppRun, podApps } from './pod-apps.js';
import { appOciConfigPath, emptyVolumeDir, podFiles } from './pod-dirs.js';
import type { AppExit, PodExit, PodManifest } from './pod-manifest.js';

/**
 * A host process that only holds the namespaces the pod's apps share (ipc, uts, and the network
 * of a `--net none` pod, its loopback up) until its stdin closes: when stage 1 ends, or dies.
 * Every app joins it through /proc/<pid>/ns, so no app's early end can take them away from the
 * others, and none has to start before the rest.
 */
export interface SharedNamespaces {
  readonly holder: NativeChild;
  readonly paths: { readonly ipc: string; readonly uts: string; readonly network?: string };
}

export async function startSharedNamespaces(manifest: PodManifest): Promise<SharedNamespaces> {
  const ownNetwork = manifest.net === 'none';
  const script = `${ownNetwork ? 'ip link set lo up || exit 1; ' : ''}echo ready; read -r line`;
  const holder = spawnNative(
    'unshare',
    ['--ipc', '--uts', ...(ownNetwork ? ['--net'] : []), '/bin/sh', '-c', script],
    { stdio: ['pipe', 'pipe', 'null'], newSession: true, watch: 'unref' },
  );
  const ready = await new Promise<boolean>((resolve) => {
    const out = holder.pipes.get(1);
    if (!out) return resolve(false);
    let text = '';
    out.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      if (text.includes('ready')) resolve(true);
    });
    out.once('close', () => resolve(text.includes('ready')));
  });
  holder.pipes.get(1)?.destroy();
  if (!ready) {
    stopSharedNamespaces({ holder, paths: { ipc: '', uts: '' } });
    throw new BerthError('internal', "Cannot make the namespaces the pod's apps share (unshare failed)");
  }
  const ns = (type: string) => `/proc/${holder.pid}/ns/${type}`;
  return { holder, paths: { ipc: ns('ipc'), uts: ns('uts'), ...(ownNetwork ? { network: ns('net') } : {}) } };
}

export function stopSharedNamespaces(shared: SharedNamespaces): void {
  if (shared.holder.stdin !== undefined) endStdin(shared.holder.stdin, 'done\n');
}

/** Rewrites each app's config.json to join the shared namespaces (their paths name this run's holder). */
export function joinSharedNamespaces(podPath: string, manifest: PodManifest, shared: SharedNamespaces): void {
  for (const app of podApps(manifest)) {
    const path = appOciConfigPath(podPath, app.bundle);
    const config = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
    writeFileAtomic(path, JSON.stringify(shareNamespaces(config, shared.paths)));
  }
}

/** Mounts the pod's tmpfs volumes on their dirs in the pod dir; destroy's unmountAll is the backstop. */
export function mountTmpfsVolumes(podPath: string, manifest: PodManifest): void {
  for (const volume of manifest.volumes ?? []) {
    if (volume.tmpfsBytes === undefined) continue;
    const dir = emptyVolumeDir(podPath, volume.name);
    mkdirSync(dir, { recursive: true });
    const result = spawnSync(
      'mount',
      ['-t', 'tmpfs', '-o', `size=${volume.tmpfsBytes},mode=1777,nosuid,nodev`, 'tmpfs', dir],
      { encoding: 'utf8' },
    );
    if (result.status !== 0)
      throw new BerthError(
        'internal',
        `Cannot mount the tmpfs of volume "${volume.name}": ${result.stderr.trim()}`,
      );
  }
}

export function unmountTmpfsVolumes(podPath: string, manifest: PodManifest): void {
  for (const volume of manifest.volumes ?? []) {
    if (volume.tmpfsBytes === undefined) continue;
    const dir = emptyVolumeDir(podPath, volume.name);
    if (spawnSync('umount', [dir]).status !== 0) spawnSync('umount', ['-l', dir]);
  }
}

/**
 * The pod's exit from its apps': with `--exit-on-first` the first app to end gives its code; else
 * the first non-zero code in app order, or 0. An app that never ran makes the pod's code null.
 */
export function podExitOfApps(
  apps: readonly PodAppRun[],
  ends: readonly AppExit[],
  exitOnFirst: boolean,
): Pick<PodExit, 'exit_code' | 'reason'> {
  const failed = ends.find((e) => e.exit_code === null);
  if (failed) return { exit_code: null, reason: `app ${failed.name}: ${failed.reason ?? 'did not run'}` };
  if (exitOnFirst && ends[0]) return { exit_code: ends[0].exit_code };
  const inOrder = apps.map((a) => ends.find((e) => e.name === a.name));
  return { exit_code: inOrder.find((e) => e !== undefined && e.exit_code !== 0)?.exit_code ?? 0 };
}

/** The app ends so far, for `status` while the pod runs (written by stage 1 only). */
export function writeAppExits(podPath: string, ends: readonly AppExit[]): void {
  writeFileAtomic(join(podPath, podFiles.appExits), `${JSON.stringify(ends)}\n`);
}
