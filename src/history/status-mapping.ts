import type { ContainerStatus } from './history-types.js';

/**
 * The seed's table, row for row: raw docker event statuses and swarm task states mapped to the
 * container service's friendlier names. Every other raw value is recorded as it is — including
 * docker's `create` (the seed maps `created`, and its final status list keeps `create` raw) and
 * `die`, whose meaning (success or failure) is only known after finalization reads the exit code.
 */
export const statusMappingTable: Readonly<Record<string, ContainerStatus>> = {
  complete: 'Complete',
  created: 'Created',
  rejected: 'Failed',
  failed: 'Failed',
  start: 'Running',
  started: 'Running',
  running: 'Running',
  kill: 'Killed',
  oom: 'Killed (Out of Memory)',
  starting: 'Starting',
};

/** Docker's container event statuses (moby swagger.yaml, as the seed lists them). */
export const dockerEventStatuses: readonly string[] = [
  'attach',
  'commit',
  'copy',
  'create',
  'destroy',
  'detach',
  'die',
  'exec_create',
  'exec_detach',
  'exec_start',
  'exec_die',
  'export',
  'health_status',
  'kill',
  'oom',
  'pause',
  'rename',
  'resize',
  'restart',
  'start',
  'stop',
  'top',
  'unpause',
  'update',
];

/** Swarm TaskState values: what polling a service reports. */
export const swarmTaskStates: readonly string[] = [
  'new',
  'allocated',
  'pending',
  'assigned',
  'accepted',
  'preparing',
  'ready',
  'starting',
  'running',
  'complete',
  'shutdown',
  'failed',
  'rejected',
  'remove',
  'orphaned',
];

/** The container service's own names: what mapping and finalization produce. */
export const friendlyStatuses: readonly ContainerStatus[] = [
  'Created',
  'Running',
  'Complete',
  'Failed',
  'Killed',
  'Killed (Out of Memory)',
  'Starting',
];

/** Statuses that end a container's life: only a newer terminal status replaces one of them. */
export const terminalStatuses: ReadonlySet<ContainerStatus> = new Set([
  'Complete',
  'Failed',
  'Killed',
  'Killed (Out of Memory)',
]);

export function isTerminalStatus(status: ContainerStatus): boolean {
  return terminalStatuses.has(status);
}

/** `Object.hasOwn` so that `constructor` or `toString` never map to something inherited. */
export function mapRawStatus(raw: string): ContainerStatus {
  return Object.hasOwn(statusMappingTable, raw) ? statusMappingTable[raw]! : raw;
}

/** Finalization's verdict: exit code 0 or unknown (null) is a success. */
export function finalStatusFor(exitCode: number | null): 'Complete' | 'Failed' {
  return exitCode === null || exitCode === 0 ? 'Complete' : 'Failed';
}

/** What finalization knows besides the exit code (FinalizationRecord's fields). */
export interface FinalizationFacts {
  readonly exit_code: number | null;
  /** Finalization itself failed (logs or outputs unreadable). */
  readonly error: string | null;
  /** The container failed though its exit code does not say so (it never ran: no image). */
  readonly failure?: string | null;
  /** It ended because it was asked to stop: by whom and how. */
  readonly stopped?: string | null;
}

/**
 * The final item of a container (seed 001's finalization, made truthful): Complete or Failed by
 * the exit code, except that a failed finalization or a launch that never ran is `Failed` with the
 * reason, and a container stopped on request is `Killed` (its SIGTERM status is the stop's doing,
 * not a failure of the app; stopped before it ran, it has none); a stopped app that exited 0
 * still completed.
 */
export function finalOutcome(fin: FinalizationFacts): { status: ContainerStatus; message: string | null } {
  if (fin.error) return { status: 'Failed', message: `Finalization failed: ${fin.error}` };
  if (fin.failure) return { status: 'Failed', message: fin.failure };
  if (fin.stopped && fin.exit_code === null) return { status: 'Killed', message: fin.stopped };
  const status = finalStatusFor(fin.exit_code);
  if (fin.stopped && status === 'Failed')
    return { status: 'Killed', message: `${fin.stopped} (exit status ${fin.exit_code})` };
  return { status, message: null };
}
