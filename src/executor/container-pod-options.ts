import {
  cellVolumeName,
  mainAppName,
  type PodSidecar,
  type PortMapping,
  type VolumeMount,
} from '../bbs/index.js';
import type { MountSpec, PodRuntime, PrepareOptions, ResolvedImage, VolumeSpec } from '../runtime/index.js';
import { type ContainerRunSpec, sharedDirPath } from './container-run-spec.js';
import type { ContainerResource, ContainerTags } from './container-state.js';

/** The pod label that carries the container's identity, so a restarted executor finds it again. */
export const containerLabel = 'berth.executor.container';

/**
 * Everything a container's pod is prepared with: its command and env (with `PORT`, and an
 * instance's `INSTANCE_INDEX` and `INSTANCE_GUID`), its memory limit, a private network with the
 * container's host ports, its volumes, sidecars and shared files, and the label with the
 * container's identity.
 */
export function containerPrepareOptions(
  container: { readonly guid: string; readonly tags: ContainerTags; readonly resource: ContainerResource },
  spec: ContainerRunSpec,
  ports: readonly PortMapping[],
  logSizeMax: number | undefined,
): PrepareOptions {
  const { guid, tags, resource } = container;
  const env = Object.entries(spec.env).map(([k, v]) => `${k}=${v}`);
  if (spec.ports[0] !== undefined) env.push(`PORT=${spec.ports[0]}`);
  if (tags.kind === 'lrp') env.push(`INSTANCE_INDEX=${tags.index}`, `INSTANCE_GUID=${tags.instance_guid}`);
  return {
    ...(spec.command && spec.command.length > 0 ? { command: spec.command } : {}),
    env,
    name: guid.replace(/[^a-zA-Z0-9_.-]/g, '-').slice(0, 63),
    memoryBytes: resource.memory_mb > 0 ? Math.max(6, resource.memory_mb) * 1024 * 1024 : null,
    net: 'private',
    ports: [...ports],
    ...(logSizeMax !== undefined ? { logSizeMax } : {}),
    labels: { [containerLabel]: JSON.stringify({ guid, tags, resource, spec }) },
    ...(spec.shared_files ? { sharedDir: sharedDirPath, sharedFiles: spec.shared_files } : {}),
    ...(spec.volumes !== undefined ? podVolumeOptions(spec.volumes, tags) : {}),
    ...(spec.sidecars !== undefined ? podSidecarOptions(spec.sidecars) : {}),
  };
}

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
