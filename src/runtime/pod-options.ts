/**
 * What a pod is prepared with, and the checks and defaults of those settings: the options every
 * caller of `PodRuntime.prepare` (the CLI's pod commands, the executor) builds.
 */
import { BerthError, InvalidArgumentError } from '../core/index.js';
import type { AppOverrides } from './app-spec.js';
import type { PortPublish } from './cni-network.js';
import type { NetMode } from './pod-manifest.js';

/** A volume as asked for, before its source is resolved (`kind: 'named'` names a berth volume). */
export interface VolumeSpec {
  readonly name: string;
  readonly kind: 'host' | 'named' | 'empty';
  /** host: an absolute host path; named: the berth volume's name. */
  readonly source?: string;
  readonly readOnly?: boolean;
  readonly tmpfsBytes?: number;
}

export interface MountSpec {
  readonly volume: string;
  readonly target: string;
  readonly readOnly?: boolean;
}

/** One more app of the pod (`---` on the command line): its image and its own overrides. */
export interface SideAppOptions extends AppOverrides {
  readonly image: string;
  /** `--app-name`; default: the image's last path part. */
  readonly name?: string;
  readonly mounts?: readonly MountSpec[];
}

export interface PrepareOptions extends AppOverrides {
  readonly name?: string;
  readonly memoryBytes?: number | null;
  /** Most processes (threads included) the pod may hold: absent = `defaultPidsLimit`, null = no limit. */
  readonly pidsLimit?: number | null;
  /** Bytes at which the pod's log rotates (`--log-size-max`); default `defaultLogSizeMax`. */
  readonly logSizeMax?: number;
  readonly net?: NetMode;
  readonly ports?: readonly PortPublish[];
  readonly labels?: Readonly<Record<string, string>>;
  /** Container path of a read-only dir of host-written files (see `writeSharedFile`). */
  readonly sharedDir?: string;
  /** Files the shared dir starts with, by name. */
  readonly sharedFiles?: Readonly<Record<string, string>>;
  /**
   * `--net private` pods about to run in this process: start attaching the network now, so the
   * CNI plugins run while the pod's files are written. The attach comes back as `network`, for
   * stage 1; whoever gets it owns the pod's network from then on.
   */
  readonly attachNetworkNow?: boolean;
  /** The first app's name (`--app-name`); default: the image's last path part. */
  readonly appName?: string;
  /** The first app's volume mounts. */
  readonly mounts?: readonly MountSpec[];
  /** The pod's other apps, in order. */
  readonly sideApps?: readonly SideAppOptions[];
  readonly volumes?: readonly VolumeSpec[];
  /** The first app to exit stops the others (default: the pod runs until its last app exits). */
  readonly exitOnFirst?: boolean;
}

/**
 * The image of a pod could not be had (unknown, or its pull failed): the same code and message as
 * the cause, marked so a cell reports a placement error instead of a crash.
 */
export class ImageUnavailableError extends BerthError {
  constructor(
    readonly image: string,
    cause: unknown,
  ) {
    super(
      cause instanceof BerthError ? cause.code : 'unavailable',
      cause instanceof Error ? cause.message : String(cause),
      { ...(cause instanceof BerthError ? cause.details : {}), image },
      { cause },
    );
    this.name = 'ImageUnavailableError';
  }
}

/**
 * Every pod's pids limit unless told otherwise, as podman's (`pids_limit` in containers.conf): a
 * fork bomb in one pod then ends at its own limit instead of the host's.
 */
export const defaultPidsLimit = 2048;

/** Parses `--memory` the way podman does: a number of bytes with an optional b/k/m/g suffix. */
export function parseMemory(text: string): number {
  const match = /^(\d+(?:\.\d+)?)([bkmg]?)$/i.exec(text.trim());
  if (!match)
    throw new InvalidArgumentError(`Invalid --memory "${text}": expected a size such as 64m or 1g`, {
      flag: 'memory',
    });
  const factor: Record<string, number> = { '': 1, b: 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 };
  const bytes = Math.floor(Number(match[1]) * (factor[(match[2] ?? '').toLowerCase()] ?? 1));
  // The kernel refuses limits this small; say so here rather than as a runc error.
  if (bytes < 6 * 1024 * 1024)
    throw new InvalidArgumentError(`Invalid --memory "${text}": the minimum is 6m`, { flag: 'memory' });
  return bytes;
}
