import { cellVolumeName, mainAppName, type PodSidecar, type VolumeMount } from '../bbs/index.js';
import type { MountSpec, PodRuntime, PrepareOptions, ResolvedImage, VolumeSpec } from '../runtime/index.js';
import type { ContainerTags } from './container-state.js';

/**
 * A container's volumes and sidecars as its pod is prepared with them.
 *
 * Volumes (the runtime's `--volume` and `--mount`):
 * a named volume is the cell's volume of its domain, name and instance index (`cellVolumeName`,
 * made on first use and kept across the instance's pods on this cell); an empty one is the pod's.
 */
export function podVolumeOptions(
  volumes: readonly VolumeMount[] | undefined,
  tags: ContainerTags,
): { volumes: VolumeSpec[]; mounts: MountSpec[] } {
  const index = tags.kind === 'lrp' ? tags.index : undefined;
  const list = volumes ?? [];
  return {
    volumes: list.map((v): VolumeSpec => {
      const readOnly = v.read_only ?? false;
      if (v.kind === 'named')
        return { name: v.name, kind: 'named', source: cellVolumeName(tags.domain, v.name, index), readOnly };
      return {
        name: v.name,
        kind: 'empty',
        readOnly,
        ...(v.tmpfs_mb !== undefined ? { tmpfsBytes: v.tmpfs_mb * 1024 * 1024 } : {}),
      };
    }),
    mounts: list.map((v) => ({ volume: v.name, target: v.target, readOnly: v.read_only ?? false })),
  };
}

/**
 * A container's sidecars as more apps of its pod: the main app is named `app`, each sidecar by its
 * name; the first app to exit ends the pod (the instance crashes and restarts as a whole).
 */
export function podSidecarOptions(
  sidecars: readonly PodSidecar[],
): Pick<PrepareOptions, 'appName' | 'sideApps' | 'exitOnFirst'> {
  if (sidecars.length === 0) return {};
  return {
    appName: mainAppName,
    sideApps: sidecars.map((s) => ({
      image: s.image,
      name: s.name,
      ...(s.command && s.command.length > 0 ? { command: s.command } : {}),
      env: Object.entries(s.env ?? {}).map(([k, v]) => `${k}=${v}`),
      ...(s.mounts && s.mounts.length > 0
        ? {
            mounts: s.mounts.map((m) => ({
              volume: m.volume,
              target: m.target,
              readOnly: m.read_only ?? false,
            })),
          }
        : {}),
    })),
    exitOnFirst: true,
  };
}

/** The sidecars' images, resolved (pulled if need be) on the executor's thread, by reference. */
export async function resolveSidecarImages(
  runtime: Pick<PodRuntime, 'resolveImage'>,
  sidecars: readonly PodSidecar[] | undefined,
): Promise<Record<string, ResolvedImage>> {
  const out: Record<string, ResolvedImage> = {};
  for (const s of sidecars ?? []) out[s.image] ??= await runtime.resolveImage(s.image);
  return out;
}
