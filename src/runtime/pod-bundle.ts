/**
 * What `prepare` works out before it makes the pod dir (the apps' images and users, the volumes'
 * checked sources), so a bad app or volume is refused with no pod left half-made, and the bundle
 * it then writes: one per app, the pod's shared files, pod.json last.
 */
import { chmodSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { InvalidArgumentError, writeFileAtomic } from '../core/index.js';
import { resolveArgs, resolveEnv, resolveWorkdir } from './app-spec.js';
import type { ResolvedImage } from './image/image-types.js';
import { buildOciConfig } from './oci-config.js';
import { checkAppNames, defaultAppName, podApps } from './pod-apps.js';
import { appOciConfigPath, emptyVolumeDir, podFiles } from './pod-dirs.js';
import type { PodApp, PodManifest, PodSideApp, PodVolume } from './pod-manifest.js';
import { ImageUnavailableError, type PrepareOptions, type SideAppOptions } from './pod-options.js';
import { resolveHostSource, resolveMounts } from './pod-volumes.js';
import { resolveUser } from './user-spec.js';
import type { VolumeStore } from './volume-store.js';

export async function resolveImage(
  images: { resolve(ref: string): Promise<ResolvedImage> },
  ref: string,
): Promise<ResolvedImage> {
  return images.resolve(ref).catch((err: unknown) => {
    throw new ImageUnavailableError(ref, err);
  });
}

/** One app's run settings from its image and overrides. */
export function planApp(
  image: ResolvedImage,
  options: PrepareOptions | SideAppOptions,
  hostname: string,
  name: string,
  volumes: readonly PodVolume[],
): PodApp {
  const user = resolveUser(image.rootfs, options.user ?? image.config.User);
  const mounts = resolveMounts(options.mounts ?? [], volumes, name);
  return {
    name,
    args: resolveArgs(image.config, options),
    env: resolveEnv(image.config, options, { hostname, home: user.home }),
    cwd: resolveWorkdir(image.config, options),
    user,
    ...(mounts.length > 0 ? { mounts } : {}),
  };
}

/** An app whose image is resolved; `planApp` makes it a PodApp once the hostname is known. */
export interface ResolvedSideApp {
  readonly name: string;
  readonly image: ResolvedImage;
  readonly options: SideAppOptions;
}

/**
 * The pod's other apps, images resolved, names checked against the first app's, and each
 * planned once (with a stand-in hostname) so a bad user or mount is refused before the pod exists.
 */
export async function resolveSideApps(
  images: { resolve(ref: string): Promise<ResolvedImage> },
  options: PrepareOptions,
  firstName: string,
  volumes: readonly PodVolume[],
): Promise<ResolvedSideApp[]> {
  const sides = options.sideApps ?? [];
  const names = sides.map((s) => s.name ?? defaultAppName(s.image));
  checkAppNames([firstName, ...names]);
  const resolved: ResolvedSideApp[] = [];
  for (const [i, side] of sides.entries()) {
    const app = { name: names[i] as string, image: await resolveImage(images, side.image), options: side };
    planSideApp(app, 'pod', volumes);
    resolved.push(app);
  }
  return resolved;
}

export function planSideApp(
  app: ResolvedSideApp,
  hostname: string,
  volumes: readonly PodVolume[],
): PodSideApp {
  return {
    ...planApp(app.image, app.options, hostname, app.name, volumes),
    name: app.name,
    image: { ref: app.options.image, id: app.image.id, rootfs: app.image.rootfs },
  };
}

/**
 * The pod's volumes with their sources checked: a host source must exist and be no symlink; a
 * named volume is made when missing (the caller holds the volumes' shared lock for that).
 */
export function planVolumes(options: PrepareOptions, volumeStore: VolumeStore): PodVolume[] {
  const seen = new Set<string>();
  return (options.volumes ?? []).map((spec) => {
    if (seen.has(spec.name))
      throw new InvalidArgumentError(`The pod has two volumes named "${spec.name}"`, { volume: spec.name });
    seen.add(spec.name);
    const readOnly = spec.readOnly ?? false;
    if (spec.kind === 'host')
      return {
        name: spec.name,
        kind: 'host',
        source: resolveHostSource(spec.name, spec.source ?? ''),
        readOnly,
      };
    if (spec.kind === 'named') {
      const volume = volumeStore.create(spec.source ?? spec.name, { ifMissing: true });
      return { name: spec.name, kind: 'named', source: volume.mountpoint, readOnly };
    }
    return {
      name: spec.name,
      kind: 'empty',
      readOnly,
      ...(spec.tmpfsBytes ? { tmpfsBytes: spec.tmpfsBytes } : {}),
    };
  });
}

/** Writes the pod's bundle into its (locked) dir; pod.json last: its presence means complete. */
export function writePodBundle(
  path: string,
  runDir: string,
  manifest: PodManifest,
  sharedFiles: Readonly<Record<string, string>>,
  hostFiles: { readonly hosts: string; readonly resolvConf: string },
  checkSharedName: (name: string) => string,
): void {
  for (const app of podApps(manifest)) {
    for (const dir of [podFiles.rootfs, podFiles.upper, podFiles.work])
      mkdirSync(join(path, app.bundle, dir), { recursive: true });
    writeFileAtomic(
      appOciConfigPath(path, app.bundle),
      JSON.stringify(buildOciConfig(manifest, runDir, app)),
    );
  }
  for (const volume of manifest.volumes ?? []) {
    if (volume.kind !== 'empty') continue;
    // Shared by apps that may run as different users: sticky and writable by all, as /tmp.
    mkdirSync(emptyVolumeDir(path, volume.name), { recursive: true });
    chmodSync(emptyVolumeDir(path, volume.name), 0o1777);
  }
  writeFileAtomic(join(path, podFiles.hosts), hostFiles.hosts);
  writeFileAtomic(join(path, podFiles.hostname), `${manifest.hostname}\n`);
  writeFileAtomic(join(path, podFiles.resolvConf), manifest.net === 'none' ? '' : hostFiles.resolvConf);
  if (manifest.sharedDir !== undefined) {
    mkdirSync(join(path, podFiles.shared), { mode: 0o755 });
    for (const [name, content] of Object.entries(sharedFiles))
      writeFileAtomic(join(path, podFiles.shared, checkSharedName(name)), content);
  }
  writeFileAtomic(join(path, podFiles.manifest), `${JSON.stringify(manifest, null, 2)}\n`);
}
