import { cellVolumeName, type VolumeMount } from '../bbs/index.js';
import type { MountSpec, VolumeSpec } from '../runtime/index.js';
import type { ContainerTags } from './container-state.js';

/**
 * A container's volumes as its pod is prepared with them (the runtime's `--volume` and `--mount`):
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
