import type { Task } from '../bbs/index.js';
import { isSuperseded, orAbsent } from '../core/index.js';
import type { ContainerRunSpec } from '../executor/index.js';
import type { RepContext } from './rep-context.js';
import { deliverTaskOutputs } from './task-output-delivery.js';
import { reconcileTask, type TaskRepAction } from './task-reconcile-table.js';

/** Reconciles one task container with its Task (the seed's task table, `reconcileTask`). */
export async function reconcileTaskContainer(ctx: RepContext, guid: string): Promise<void> {
  const container = ctx.executor.get(guid);
  if (container?.tags.kind !== 'task') return;
  const task = (await orAbsent(ctx.bbs.getTask({ task_guid: container.tags.task_guid }))) ?? null;
  const fresh = ctx.executor.get(guid);
  if (!fresh) return;
  await applyTaskActions(ctx, reconcileTask(fresh, task, ctx.cellId), task);
}

/** A RUNNING task of this cell with no container: the table says what becomes of it. */
export async function reconcileLostTask(ctx: RepContext, task: Task): Promise<void> {
  await applyTaskActions(ctx, reconcileTask(null, task, ctx.cellId), null);
}

async function applyTaskActions(
  ctx: RepContext,
  actions: readonly TaskRepAction[],
  task: Task | null,
): Promise<void> {
  const { bbs, executor } = ctx;
  for (const action of actions) {
    try {
      switch (action.kind) {
        case 'none':
          break;
        case 'start-task':
          await bbs.startTask({
            task_guid: action.taskGuid,
            expected: action.expected,
            cell_id: action.cellId,
          });
          break;
        case 'run-container':
          if (task) await executor.run(action.containerGuid, runSpecOfTask(task));
          break;
        case 'complete-task': {
          const container = executor.get(action.taskGuid);
          // Outputs are collected before completion, so a COMPLETED task's outputs are there.
          const outputsFailure = task ? await deliverTaskOutputs(ctx, task) : '';
          await bbs.completeTask({
            task_guid: action.taskGuid,
            expected: action.expected,
            cell_id: action.cellId,
            failed: action.failed || outputsFailure !== '',
            failure_reason: [action.failureReason, outputsFailure].filter((r) => r !== '').join('; '),
            result: container?.task_result ?? '',
          });
          break;
        }
        case 'fail-task':
          if (action.revalidate && executor.get(action.taskGuid)) return;
          await bbs.failTask({
            task_guid: action.taskGuid,
            expected: action.expected,
            failure_reason: action.failureReason,
          });
          break;
        case 'delete-container':
          await executor.deleteContainer(action.containerGuid);
          break;
      }
    } catch (err) {
      if (isSuperseded(err)) {
        // Lost the race (e.g. another rep started the task): drop our reservation.
        if (action.kind === 'start-task') await executor.deleteContainer(action.taskGuid);
        return;
      }
      throw err;
    }
  }
}

function runSpecOfTask(task: Task): ContainerRunSpec {
  return {
    image: task.image,
    ...(task.command ? { command: task.command } : {}),
    env: task.env,
    ports: [],
    ...(task.result_file ? { result_file: task.result_file } : {}),
    ...(task.volumes ? { volumes: task.volumes } : {}),
  };
}
