import type { Monitor, PodSidecar, VolumeMount } from '../bbs/index.js';

/** What to run in a reserved container: the run info of a DesiredLRP or a Task. */
export interface ContainerRunSpec {
  readonly image: string;
  readonly command?: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  /** Container ports; each gets a host port on this cell. The first is $PORT. */
  readonly ports: readonly number[];
  readonly monitor?: Monitor;
  readonly start_timeout_s?: number;
  /** Tasks: a file in the container whose first 10 KiB become the task result. */
  readonly result_file?: string;
  /**
   * Files the container sees read-only under `sharedDirPath`, which the cell keeps current while it
   * runs (`writeSharedFile`); absent = no shared dir.
   */
  readonly shared_files?: Readonly<Record<string, string>>;
  /** The DesiredLRP's or task's volumes (container-pod-options.ts); absent = none. */
  readonly volumes?: readonly VolumeMount[];
  /** More apps of the pod (container-pod-options.ts); absent = none. */
  readonly sidecars?: readonly PodSidecar[];
}

/** Where a container sees its shared files (its relations file among them). */
export const sharedDirPath = '/run/berth';
