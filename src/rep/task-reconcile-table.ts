import type { ModificationTag, Task } from '../bbs/index.js';
import { InvalidArgumentError } from '../core/index.js';
import type { ExecutorContainer } from '../executor/index.js';
import { activeStates } from './reconcile-table.js';

/*
 * The rep's reconciliation of one task container with its Task record, as a pure function of the
 * pair; the tasks' half of what reconcile-table.ts is for LRPs. The seed stops at the task states,
 * so the rows are DESIGN.md's ("cluster") and issue 5's. "A" is the reconciling cell, "O" any other.
 */

export type TaskContainerCase =
  | 'RESERVED'
  | 'INITIALIZING, CREATED or RUNNING'
  | 'COMPLETED'
  | 'No Container';
export type TaskCase = 'No Task' | 'PENDING' | 'RUNNING on A' | 'RUNNING on O' | 'COMPLETED or RESOLVING';
export type TaskRowAction =
  | 'Do Nothing'
  | 'Delete Container'
  | 'CAS to RUNNING on A, then run the container'
  | 'CAS to RUNNING on A'
  | 'Run the container'
  | 'CAS to COMPLETED with the result, then Delete Container'
  | 'CAS to COMPLETED, failed "container vanished"';

export interface TaskReconcileRow {
  readonly name: string;
  readonly container: TaskContainerCase;
  readonly task: TaskCase;
  readonly action: TaskRowAction;
  readonly reason: string;
}

function taskRow(
  container: TaskContainerCase,
  task: TaskCase,
  action: TaskRowAction,
  reason: string,
): TaskReconcileRow {
  return { name: `${container} | ${task}`, container, task, action, reason };
}

const ACTIVE = 'INITIALIZING, CREATED or RUNNING';

/**
 * At most once: a task's command runs only in a container whose cell won the PENDING → RUNNING
 * CAS first (Diego's rep does the same), so two reps racing for one task never both run it.
 */
export const taskReconcileTable: readonly TaskReconcileRow[] = [
  taskRow('RESERVED', 'No Task', 'Delete Container', 'The task was deleted while it was being auctioned'),
  taskRow(
    'RESERVED',
    'PENDING',
    'CAS to RUNNING on A, then run the container',
    'A won the auction; winning the CAS is what entitles A to run it',
  ),
  taskRow(
    'RESERVED',
    'RUNNING on A',
    'Run the container',
    'A won the CAS but the run was never issued (rep restarted in between); a reservation has not run anything yet',
  ),
  taskRow('RESERVED', 'RUNNING on O', 'Delete Container', 'O won the race for the task'),
  taskRow(
    'RESERVED',
    'COMPLETED or RESOLVING',
    'Delete Container',
    'The task was cancelled or failed before it started here',
  ),
  taskRow(ACTIVE, 'No Task', 'Delete Container', 'The task was deleted; nobody wants its result'),
  taskRow(
    ACTIVE,
    'PENDING',
    'CAS to RUNNING on A',
    'The container got ahead of the BBS (purged or rolled-back record); claim it, and if O holds it the next pass deletes this container',
  ),
  taskRow(ACTIVE, 'RUNNING on A', 'Do Nothing', 'A is running the task'),
  taskRow(ACTIVE, 'RUNNING on O', 'Delete Container', 'The task is running on O; it must not run twice'),
  taskRow(
    ACTIVE,
    'COMPLETED or RESOLVING',
    'Delete Container',
    'The task was cancelled (or failed by the converger): destroy its container within one poll',
  ),
  taskRow('COMPLETED', 'No Task', 'Delete Container', 'The task was deleted; nobody wants its result'),
  taskRow(
    'COMPLETED',
    'PENDING',
    'Delete Container',
    'A never won the start, so its command never ran under a claim here; the task stays PENDING for another placement',
  ),
  taskRow(
    'COMPLETED',
    'RUNNING on A',
    'CAS to COMPLETED with the result, then Delete Container',
    'The task finished on A: record failed/failure_reason and the result file before the container is destroyed',
  ),
  taskRow('COMPLETED', 'RUNNING on O', 'Delete Container', "The task is O's; this container lost the race"),
  taskRow(
    'COMPLETED',
    'COMPLETED or RESOLVING',
    'Delete Container',
    'The completion is already recorded (or the task was cancelled)',
  ),
  taskRow('No Container', 'No Task', 'Do Nothing', 'Nothing exists on either side'),
  taskRow('No Container', 'PENDING', 'Do Nothing', 'The auction owns it until some cell starts it'),
  taskRow(
    'No Container',
    'RUNNING on A',
    'CAS to COMPLETED, failed "container vanished"',
    'Diego thinks A runs the task but A has no container; a task is never restarted, so it fails',
  ),
  taskRow('No Container', 'RUNNING on O', 'Do Nothing', 'O owns it'),
  taskRow('No Container', 'COMPLETED or RESOLVING', 'Do Nothing', 'Nothing runs and the task is done'),
];

const taskRowIndex: ReadonlyMap<string, TaskReconcileRow> = new Map(
  taskReconcileTable.map((r) => [`${r.container}|${r.task}`, r]),
);

export const containerVanishedReason = 'container vanished';

export type TaskRepAction =
  | { readonly kind: 'none' }
  | { readonly kind: 'delete-container'; readonly containerGuid: string; readonly revalidate: boolean }
  /** CAS PENDING → RUNNING on A; the applier stops the plan here when the CAS is lost. */
  | {
      readonly kind: 'start-task';
      readonly taskGuid: string;
      readonly cellId: string;
      readonly expected: ModificationTag;
    }
  /** Ask the executor to run the reserved container; only ever after this cell holds the task. */
  | { readonly kind: 'run-container'; readonly containerGuid: string }
  /**
   * CAS RUNNING on A → COMPLETED. When `resultFile` is not empty the applier first reads the first
   * 10 KiB of that file from the container (before deleting it) into `result`.
   */
  | {
      readonly kind: 'complete-task';
      readonly taskGuid: string;
      readonly cellId: string;
      readonly expected: ModificationTag;
      readonly failed: boolean;
      readonly failureReason: string;
      readonly resultFile: string;
    }
  /**
   * CAS RUNNING on A → COMPLETED, failed. `revalidate`: the applier lists the container again first,
   * since a reservation may have appeared after the listing this plan was made from.
   */
  | {
      readonly kind: 'fail-task';
      readonly taskGuid: string;
      readonly cellId: string;
      readonly expected: ModificationTag;
      readonly failureReason: string;
      readonly revalidate: boolean;
    };

function taskContainerCase(container: ExecutorContainer | null): TaskContainerCase {
  if (container === null) return 'No Container';
  if (container.state === 'RESERVED') return 'RESERVED';
  if (container.state === 'COMPLETED') return 'COMPLETED';
  return ACTIVE;
}

function taskCase(task: Task | null, cellId: string): TaskCase {
  if (task === null) return 'No Task';
  switch (task.state) {
    case 'PENDING':
      return 'PENDING';
    case 'RUNNING':
      return task.cell_id === cellId ? 'RUNNING on A' : 'RUNNING on O';
    case 'COMPLETED':
    case 'RESOLVING':
      return 'COMPLETED or RESOLVING';
  }
}

export function matchTaskRow(
  container: ExecutorContainer | null,
  task: Task | null,
  cellId: string,
): TaskReconcileRow {
  if (container !== null) {
    if (container.tags.kind !== 'task') {
      throw new InvalidArgumentError(
        `Cannot reconcile container ${container.guid} as a task: it runs an LRP`,
        {
          container_guid: container.guid,
        },
      );
    }
    if (task !== null && container.tags.task_guid !== task.task_guid) {
      throw new InvalidArgumentError(
        `Cannot reconcile container ${container.guid} of task ${container.tags.task_guid} with task ${task.task_guid}`,
        { container_guid: container.guid },
      );
    }
  }
  const key = `${taskContainerCase(container)}|${taskCase(task, cellId)}`;
  const found = taskRowIndex.get(key);
  if (found === undefined) throw new InvalidArgumentError(`No rep task table row for ${key}`);
  return found;
}

/** The rep's plan for one task container/Task pair. */
export function reconcileTask(
  container: ExecutorContainer | null,
  task: Task | null,
  cellId: string,
): readonly TaskRepAction[] {
  const r = matchTaskRow(container, task, cellId);
  if (r.action === 'Do Nothing') return [{ kind: 'none' }];
  if (r.action === 'CAS to COMPLETED, failed "container vanished"') {
    const t = task as Task;
    return [
      {
        kind: 'fail-task',
        taskGuid: t.task_guid,
        cellId,
        expected: t.modification_tag,
        failureReason: containerVanishedReason,
        revalidate: true,
      },
    ];
  }
  const c = container as ExecutorContainer;
  const del: TaskRepAction = {
    kind: 'delete-container',
    containerGuid: c.guid,
    revalidate: activeStates.has(c.state),
  };
  switch (r.action) {
    case 'Delete Container':
      return [del];
    case 'CAS to RUNNING on A, then run the container': {
      const t = task as Task;
      return [
        { kind: 'start-task', taskGuid: t.task_guid, cellId, expected: t.modification_tag },
        { kind: 'run-container', containerGuid: c.guid },
      ];
    }
    case 'CAS to RUNNING on A': {
      const t = task as Task;
      return [{ kind: 'start-task', taskGuid: t.task_guid, cellId, expected: t.modification_tag }];
    }
    case 'Run the container':
      return [{ kind: 'run-container', containerGuid: c.guid }];
    case 'CAS to COMPLETED with the result, then Delete Container': {
      const t = task as Task;
      const result = c.result;
      // A stop A was asked for while the task still ran (evacuation timeout) interrupted it: failed.
      const failed = result === undefined || result.failed || result.kind === 'shutdown';
      const failureReason = !failed
        ? ''
        : result === undefined
          ? 'container completed without a result'
          : result.reason || 'task container was stopped';
      return [
        {
          kind: 'complete-task',
          taskGuid: t.task_guid,
          cellId,
          expected: t.modification_tag,
          failed,
          failureReason,
          resultFile: failed ? '' : t.result_file,
        },
        del,
      ];
    }
  }
}
