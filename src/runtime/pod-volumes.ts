/**
 * Volumes of a pod (rkt's `--volume` and `--mount`, docker's `-v`): parsing the flags, checking the
 * container targets and resolving each volume's host source at prepare, safely.
 */
import { lstatSync, realpathSync } from 'node:fs';
import { posix } from 'node:path';
import {
  errnoCode,
  InvalidArgumentError,
  mountTargetProblem,
  plainMountTarget,
  volumeNamePattern,
} from '../core/index.js';
import type { AppMount, PodVolume } from './pod-manifest.js';
import { type MountSpec, parseMemory, type VolumeSpec } from './pod-options.js';

export type { MountSpec, VolumeSpec };

export { volumeNamePattern };

/** The tmpfs size of `kind=empty,tmpfs=true` when no size is given (as /dev/shm's). */
const defaultTmpfsBytes = 64 * 1024 * 1024;

function keyValues(text: string, flag: string): { head: string; fields: Map<string, string> } {
  const [head = '', ...rest] = text.split(',');
  const fields = new Map<string, string>();
  for (const part of rest) {
    const eq = part.indexOf('=');
    if (eq <= 0)
      throw new InvalidArgumentError(`Invalid --${flag} "${text}": "${part}" is not KEY=VALUE`, { flag });
    fields.set(part.slice(0, eq), part.slice(eq + 1));
  }
  return { head, fields };
}

function parseBool(value: string | undefined, text: string, flag: string): boolean {
  if (value === undefined || value === 'false') return false;
  if (value === 'true') return true;
  throw new InvalidArgumentError(`Invalid --${flag} "${text}": expected true or false, got "${value}"`, {
    flag,
  });
}

function checkVolumeName(name: string, text: string, flag: string): string {
  if (!volumeNamePattern.test(name))
    throw new InvalidArgumentError(
      `Invalid --${flag} "${text}": a volume name is letters, digits, "_", "." and "-" (max 63)`,
      { flag },
    );
  return name;
}

/** `--volume NAME,kind=host,source=/path[,readOnly=true]` or `NAME,kind=empty[,tmpfs=true[,size=64m]]`. */
export function parseVolumeFlag(text: string): VolumeSpec {
  const { head, fields } = keyValues(text, 'volume');
  const name = checkVolumeName(head, text, 'volume');
  const known = new Set(['kind', 'source', 'readOnly', 'tmpfs', 'size']);
  for (const key of fields.keys())
    if (!known.has(key))
      throw new InvalidArgumentError(`Invalid --volume "${text}": unknown key "${key}"`, { flag: 'volume' });
  const kind = fields.get('kind');
  const readOnly = parseBool(fields.get('readOnly'), text, 'volume');
  if (kind === 'host') {
    const source = fields.get('source');
    if (source === undefined)
      throw new InvalidArgumentError(`Invalid --volume "${text}": kind=host needs source=/path`, {
        flag: 'volume',
      });
    return { name, kind, source, readOnly };
  }
  if (kind === 'empty') {
    if (fields.has('source'))
      throw new InvalidArgumentError(`Invalid --volume "${text}": kind=empty takes no source`, {
        flag: 'volume',
      });
    const size = fields.get('size');
    const tmpfs = parseBool(fields.get('tmpfs'), text, 'volume') || size !== undefined;
    return {
      name,
      kind,
      readOnly,
      ...(tmpfs ? { tmpfsBytes: size === undefined ? defaultTmpfsBytes : parseMemory(size) } : {}),
    };
  }
  throw new InvalidArgumentError(`Invalid --volume "${text}": kind must be host or empty`, {
    flag: 'volume',
  });
}

/** `--mount volume=NAME,target=/path[,readOnly=true]`. */
export function parseMountFlag(text: string): MountSpec {
  const { fields } = keyValues(`,${text}`, 'mount');
  const volume = fields.get('volume');
  const target = fields.get('target');
  if (volume === undefined || target === undefined)
    throw new InvalidArgumentError(`Invalid --mount "${text}": expected volume=NAME,target=/path`, {
      flag: 'mount',
    });
  return { volume, target, readOnly: parseBool(fields.get('readOnly'), text, 'mount') };
}

/**
 * `-v /host:/container[:ro]` (a host volume) or `-v NAME:/container[:ro]` (a berth volume, made if
 * missing). `index` names the host volumes this makes, which have no name of their own.
 */
export function parseShortVolume(text: string, index: number): { volume: VolumeSpec; mount: MountSpec } {
  const parts = text.split(':');
  const [source = '', target = '', mode] = parts;
  if (parts.length < 2 || parts.length > 3 || (mode !== undefined && mode !== 'ro' && mode !== 'rw'))
    throw new InvalidArgumentError(`Invalid -v "${text}": expected SOURCE:/container[:ro]`, { flag: 'v' });
  const readOnly = mode === 'ro';
  const volume: VolumeSpec = source.startsWith('/')
    ? { name: `host-${index}`, kind: 'host', source, readOnly }
    : { name: checkVolumeName(source, text, 'v'), kind: 'named', source, readOnly: false };
  return { volume, mount: { volume: volume.name, target, readOnly } };
}

/** A container path a volume may be mounted at (core's `mountTargetProblem`), in its plain spelling. */
export function checkMountTarget(target: string): string {
  const problem = mountTargetProblem(target);
  if (problem !== undefined)
    throw new InvalidArgumentError(`Cannot mount a volume at ${problem}`, { target });
  return plainMountTarget(target);
}

/**
 * A host source as it may be bound: it must exist and be reached through no symlink at all, so
 * the path the user gave is the directory that gets mounted (a symlink planted there, say in a
 * shared dir, cannot send the bind somewhere else).
 */
export function resolveHostSource(volume: string, source: string): string {
  if (!source.startsWith('/'))
    throw new InvalidArgumentError(`Volume "${volume}": host source "${source}" must be an absolute path`, {
      volume,
    });
  const plain = posix.normalize(source).replace(/(.)\/$/, '$1');
  let real: string;
  try {
    lstatSync(plain);
    real = realpathSync(plain);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT' || errnoCode(err) === 'ENOTDIR')
      throw new InvalidArgumentError(`Volume "${volume}": host source ${source} does not exist`, {
        volume,
        source,
      });
    throw err;
  }
  if (real !== plain)
    throw new InvalidArgumentError(
      `Volume "${volume}": host source ${source} is reached through a symlink (it leads to ${real}); refusing to mount it, give the real path`,
      { volume, source },
    );
  return plain;
}

/**
 * Checks one app's mounts against the pod's volumes: each names a volume of the pod, targets are
 * valid and distinct; a mount is read-only when it or its volume says so.
 */
export function resolveMounts(
  mounts: readonly MountSpec[],
  volumes: readonly PodVolume[],
  app: string,
): AppMount[] {
  const targets = new Set<string>();
  return mounts.map((m) => {
    const volume = volumes.find((v) => v.name === m.volume);
    if (!volume)
      throw new InvalidArgumentError(
        `App "${app}" mounts volume "${m.volume}", which the pod does not have`,
        {
          volume: m.volume,
        },
      );
    const target = checkMountTarget(m.target);
    if (targets.has(target))
      throw new InvalidArgumentError(`App "${app}" mounts two volumes at ${target}`, { target });
    targets.add(target);
    return { volume: m.volume, target, readOnly: volume.readOnly || (m.readOnly ?? false) };
  });
}
