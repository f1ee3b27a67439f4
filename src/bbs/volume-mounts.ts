import { createHash } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import { InvalidArgumentError, mountTargetProblem, plainMountTarget } from '../core/index.js';
import { cellPlacementTag } from './placement-tags.js';

/**
 * A volume of an LRP instance or a task (issue 23, Diego's local volumes), mounted at `target` in
 * its container. `named`: data kept on the cell, one volume per instance index (`cellVolumeName`),
 * across the instance's restarts there; it pins the instance to that cell (volume-pins.ts).
 * `empty`: a fresh directory of the container's pod, or a tmpfs of `tmpfs_mb`, gone with the pod.
 *
 * There is no `host` kind: a cluster user never names a path of a cell (docs/security.md).
 */
export interface VolumeMount {
  /** The volume's name in its domain: the same name in the same domain is the same data. */
  readonly name: string;
  readonly kind: 'named' | 'empty';
  /** Absolute, in the container; not `/`, not over /proc, /sys or /dev. */
  readonly target: string;
  readonly read_only?: boolean;
  /** `empty` only: a tmpfs of this many MB instead of a directory on the cell's disk. */
  readonly tmpfs_mb?: number;
}

/** The bounds of volumes (docs/limits.md). */
export const volumeLimits = {
  maxVolumes: 8,
  /** Leaves room on the cell for the index and the domain's hash (`cellVolumeName`). */
  maxNameLength: 40,
  maxTmpfsMb: 16 * 1024,
} as const;

/** A volume name in the cluster: what a cell's volume name allows, shorter. Lookahead-free for the fuzzer. */
export const clusterVolumeNamePattern = '^[A-Za-z0-9][A-Za-z0-9_.-]*$';

export const VolumeMountsSchema = Type.Array(
  Type.Object(
    {
      name: Type.String({
        pattern: clusterVolumeNamePattern,
        maxLength: volumeLimits.maxNameLength,
        description: 'the volume in its domain',
      }),
      kind: Type.Union([Type.Literal('named'), Type.Literal('empty')], {
        description: 'named: kept on the cell per instance index; empty: fresh per container',
      }),
      target: Type.String({ maxLength: 1024, description: 'absolute path in the container' }),
      read_only: Type.Optional(Type.Boolean()),
      tmpfs_mb: Type.Optional(Type.Integer({ minimum: 1, maximum: volumeLimits.maxTmpfsMb })),
    },
    { additionalProperties: false },
  ),
  { maxItems: volumeLimits.maxVolumes },
);

function refuse(field: string, message: string): never {
  throw new InvalidArgumentError(`Invalid ${field}: ${message}`, { field });
}

/**
 * Checks the volumes of a DesiredLRP or a task (`field` is `volumes`), naming the offending field
 * (`volumes[1].target`), and returns them with their targets in plain spelling. What the HTTP
 * schema already refuses is checked again: in-process callers skip the schema.
 */
export function validateVolumeMounts(
  volumes: readonly VolumeMount[] | undefined,
  field = 'volumes',
): readonly VolumeMount[] | undefined {
  if (volumes === undefined) return undefined;
  if (!Array.isArray(volumes)) refuse(field, 'expected a list of volumes');
  if (volumes.length > volumeLimits.maxVolumes)
    refuse(field, `at most ${volumeLimits.maxVolumes} volumes, got ${volumes.length}`);
  const names = new Set<string>();
  const targets = new Map<string, string>();
  return volumes.map((v, i) => {
    const at = `${field}[${i}]`;
    if (typeof v.name !== 'string' || !new RegExp(clusterVolumeNamePattern).test(v.name))
      refuse(
        `${at}.name`,
        `"${String(v.name)}": letters, digits, "_", "." and "-", starting with a letter or digit`,
      );
    if (v.name.length > volumeLimits.maxNameLength)
      refuse(`${at}.name`, `"${v.name}" is longer than ${volumeLimits.maxNameLength}`);
    if (names.has(v.name)) refuse(`${at}.name`, `two volumes are named "${v.name}"`);
    names.add(v.name);
    if (v.kind !== 'named' && v.kind !== 'empty')
      refuse(
        `${at}.kind`,
        `"${String(v.kind)}": expected named or empty (a cell's host paths are not offered)`,
      );
    if (v.tmpfs_mb !== undefined && v.kind !== 'empty')
      refuse(`${at}.tmpfs_mb`, 'only an empty volume can be a tmpfs');
    if (
      v.tmpfs_mb !== undefined &&
      !(Number.isInteger(v.tmpfs_mb) && v.tmpfs_mb >= 1 && v.tmpfs_mb <= volumeLimits.maxTmpfsMb)
    )
      refuse(`${at}.tmpfs_mb`, `expected an integer from 1 to ${volumeLimits.maxTmpfsMb}`);
    const problem = typeof v.target === 'string' ? mountTargetProblem(v.target) : 'expected a path';
    if (problem !== undefined) refuse(`${at}.target`, problem);
    const target = plainMountTarget(v.target);
    const clash = targets.get(target);
    if (clash !== undefined) refuse(`${at}.target`, `volume "${clash}" is mounted at ${target} already`);
    targets.set(target, v.name);
    return { ...v, target };
  });
}

/** The named volumes among a definition's volumes (what pins an instance to its cell). */
export function namedVolumes(volumes: readonly VolumeMount[] | undefined): string[] {
  return (volumes ?? []).filter((v) => v.kind === 'named').map((v) => v.name);
}

/**
 * The name a named volume has on its cell (`berth volume list` there): one per domain, volume
 * and instance index (tasks have none), within the runtime's 63 characters.
 */
export function cellVolumeName(domain: string, volume: string, index?: number): string {
  const scope = createHash('sha256').update(domain).digest('hex').slice(0, 10);
  return `${volume}.${index === undefined ? 'task' : index}.${scope}`;
}

/** The placement tags of an instance whose named volumes live on `cellId`: it goes there or nowhere. */
export function pinnedPlacementTags(tags: readonly string[], cellId: string): string[] {
  const pin = cellPlacementTag(cellId);
  return tags.includes(pin) ? [...tags] : [...tags, pin];
}
