import type { ActualLRPNetInfo } from '../bbs/index.js';
import { IllegalTransitionError } from '../core/index.js';

/** The executor's container states of seed 002 ("Container State"). */
export type ContainerState = 'RESERVED' | 'INITIALIZING' | 'CREATED' | 'RUNNING' | 'COMPLETED';

export const containerStates: readonly ContainerState[] = [
  'RESERVED',
  'INITIALIZING',
  'CREATED',
  'RUNNING',
  'COMPLETED',
];

/**
 * The seed's "Allowed transitions", exactly. There is no RESERVED → COMPLETED: a reservation that
 * never initializes is deleted by the rep, and deletion is not a state ("Containers can be deleted
 * regardless of current state": `Executor.deleteContainer`, see executor-delete.test.ts).
 * COMPLETED is terminal: a finished container is never reused, so a restart is a new container.
 */
export const containerTransitions: Readonly<Record<ContainerState, readonly ContainerState[]>> = {
  RESERVED: ['INITIALIZING'],
  INITIALIZING: ['CREATED', 'COMPLETED'],
  CREATED: ['COMPLETED', 'RUNNING'],
  RUNNING: ['COMPLETED'],
  COMPLETED: [],
};

export function canTransitionContainer(from: ContainerState, to: ContainerState): boolean {
  return containerTransitions[from].includes(to);
}

export function assertContainerTransition(from: ContainerState, to: ContainerState, subject?: string): void {
  if (!canTransitionContainer(from, to)) throw new IllegalTransitionError('container', from, to, subject);
}

/** Identifies the ActualLRP instance a container runs; instance_guid ties it to one claim. */
export interface LRPContainerTags {
  readonly kind: 'lrp';
  readonly process_guid: string;
  readonly index: number;
  readonly instance_guid: string;
  readonly domain: string;
}

export interface TaskContainerTags {
  readonly kind: 'task';
  readonly task_guid: string;
  readonly domain: string;
}

export type ContainerTags = LRPContainerTags | TaskContainerTags;

export interface ContainerResource {
  readonly memory_mb: number;
  readonly disk_mb: number;
}

/**
 * How a COMPLETED container ended. `crashed`: it died unexpectedly (exit, failed monitor);
 * `shutdown`: it was asked to stop. The rep's table treats the two differently.
 */
export interface ContainerResult {
  readonly failed: boolean;
  readonly reason: string;
  /**
   * `crashed`: it ended on its own; `shutdown`: it was stopped; `no-image`: it never ran because
   * its image could not be had (a placement problem, not a crash).
   */
  readonly kind: 'crashed' | 'shutdown' | 'no-image';
  /** The kernel killed it at its memory limit (read from the pod's cgroup). */
  readonly oom?: boolean;
}

/**
 * What a container's end means, from its pod's exit record and whether a stop was asked for (by
 * the rep, or by a user's `berth stop` of the pod, who is then named).
 */
export function containerResult(
  exit:
    | { readonly exit_code: number | null; readonly reason?: string; readonly oom_killed?: boolean }
    | undefined,
  asked: { readonly user: string | null } | undefined,
): ContainerResult {
  if (asked)
    return { failed: false, reason: asked.user ? `stopped by ${asked.user}` : 'stopped', kind: 'shutdown' };
  const code = exit?.exit_code ?? null;
  return {
    failed: code !== 0,
    reason: exit?.oom_killed
      ? `${exit.reason ?? 'out of memory'} (exit status ${code})`
      : code === null
        ? (exit?.reason ?? 'the container vanished')
        : `exited with status ${code}`,
    ...(exit?.oom_killed ? { oom: true } : {}),
    // Ended on its own: for an LRP that is a crash; for a task, its normal end (the rep's task
    // table reads `failed`, and treats only `shutdown`, a stop, as interrupted).
    kind: 'crashed',
  };
}

export interface ExecutorContainer {
  /** For LRPs the instance_guid, for tasks the task_guid: one container per claim. */
  readonly guid: string;
  readonly state: ContainerState;
  readonly tags: ContainerTags;
  readonly resource: ContainerResource;
  /** Set once the container is COMPLETED. */
  readonly result?: ContainerResult;
  /** The app's exit status once COMPLETED (null: it never ran, or its status was lost). */
  readonly exit_code?: number | null;
  /** Tasks: the first 10 KiB of the task's result_file, read when the container completed. */
  readonly task_result?: string;
  /** Known once the container exists on the network (CREATED and later). */
  readonly net_info?: ActualLRPNetInfo;
  /**
   * Found on disk when the executor started (a restarted cell) rather than seen happening: what
   * it reports was found by looking, not observed as an event.
   */
  readonly adopted?: boolean;
  /** When the pod's app ended, from its exit record (COMPLETED containers). */
  readonly finished_at?: string;
}
