import type { PodRuntime } from '../runtime/index.js';

export interface ExecutorCapacity {
  readonly memory_mb: number;
  readonly disk_mb: number;
  readonly containers: number;
}

export interface ExecutorOptions {
  readonly runtime: PodRuntime;
  readonly capacity: ExecutorCapacity;
  /** The address other machines reach this cell on; recorded in ActualLRP net info. */
  readonly hostAddress: string;
  readonly portRange?: { readonly from: number; readonly to: number };
  readonly monitorIntervalMs?: number;
  /** How often exits of pods not started by this process (after a restart) are looked for. */
  readonly pollIntervalMs?: number;
  readonly stopTimeoutMs?: number;
  /** Bytes at which each container's log rotates (`berth cell --log-size-max`); the runtime's default otherwise. */
  readonly logSizeMax?: number;
  /**
   * Containers being prepared and started at once (default: the machine's cores); the rest wait
   * their turn in order, already RESERVED and INITIALIZING. Capacity says how many may run; this
   * says how many may start together. A start is mostly CPU (the pod tree, the stage-1 holder,
   * CNI, runc), so starting more than there are cores only slows every start: 1,000 tasks on 3
   * cells of 16 containers each on 2 cores spent 270–400 ms of CPU per task against about 210 ms
   * at 4 each (docs/performance.md).
   */
  readonly maxConcurrentStarts?: number;
}
