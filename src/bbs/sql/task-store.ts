import { randomUUID } from 'node:crypto';
import { BerthError, InvalidArgumentError, NotFoundError } from '../../core/index.js';
import type {
  BbsStore,
  CancelTaskRequest,
  CasTaskRequest,
  CompleteTaskRequest,
  FailTaskRequest,
  StartTaskRequest,
  TaskFilter,
  TaskGuidRequest,
} from '../bbs-store.js';
import type { ModificationTag, Task } from '../bbs-types.js';
import { taskWithDefaults } from '../definition-defaults.js';
import { assertTaskTransition, taskDeletableStates } from '../task-transitions.js';
import { recordStop } from './request-outbox.js';
import { rowToTask, taskToRow } from './row-mapping.js';
import {
  type CasTarget,
  casWrite,
  nextTag,
  type Reader,
  requireTag,
  type StoreContext,
  stripUndefined,
  type Tx,
  validatePage,
} from './store-context.js';
import { deleteTaskOutputs } from './task-output-store.js';

/**
 * Tasks (seed 003): desired with a start request for the auctioneer, moved through their states
 * with a CAS on their tag, deleted once completed or resolved.
 */
export class TaskStore {
  readonly #ctx: StoreContext;

  constructor(ctx: StoreContext) {
    this.#ctx = ctx;
  }

  async desireTask(given: Parameters<BbsStore['desireTask']>[0]): Promise<Task> {
    const req = taskWithDefaults(given);
    if (!req.task_guid) throw new InvalidArgumentError('task_guid must not be empty', { field: 'task_guid' });
    return this.#ctx.mutate('desireTask', async (tx) => {
      const existing = await loadTask(tx, req.task_guid, true);
      if (existing) {
        throw new BerthError('already_exists', `Cannot desire task "${req.task_guid}": it already exists`, {
          kind: 'Task',
          id: req.task_guid,
          current: existing,
        });
      }
      const task: Task = {
        ...stripUndefined(req),
        state: 'PENDING',
        cell_id: '',
        result: '',
        failed: false,
        failure_reason: '',
        created_at: tx.now,
        updated_at: tx.now,
        first_completed_at: null,
        modification_tag: { epoch: randomUUID(), index: 0 },
      };
      try {
        await tx.db.insertInto('tasks').values(taskToRow(task)).execute();
      } catch (err) {
        // Two servers desiring one guid at once: the loser's read saw nothing, its insert collides.
        if (tx.isUniqueViolation(err)) {
          throw new BerthError('already_exists', `Cannot desire task "${req.task_guid}": it already exists`, {
            kind: 'Task',
            id: req.task_guid,
          });
        }
        throw err;
      }
      const payload = {
        memory_mb: task.memory_mb,
        disk_mb: task.disk_mb,
        placement_tags: task.placement_tags,
      };
      await tx.db
        .insertInto('start_requests')
        .values({
          kind: 'task',
          guid: task.task_guid,
          idx: 0,
          domain: task.domain,
          payload: JSON.stringify(payload),
          available_at: tx.now,
          created_at: tx.now,
        })
        .execute();
      tx.events.push({ type: 'task_created', task });
      return task;
    });
  }

  async getTask(req: TaskGuidRequest): Promise<Task> {
    const task = await loadTask(this.#ctx, req.task_guid, false);
    if (!task) throw new NotFoundError('Task', req.task_guid);
    return task;
  }

  async listTasks(req: TaskFilter = {}): Promise<Task[]> {
    validatePage(req);
    let query = this.#ctx.db.selectFrom('tasks').selectAll().orderBy('task_guid');
    if (req.domain !== undefined) query = query.where('domain', '=', req.domain);
    if (req.cell_id !== undefined) query = query.where('cell_id', '=', req.cell_id);
    if (req.state !== undefined) query = query.where('state', '=', req.state);
    if (req.after !== undefined) query = query.where('task_guid', '>', req.after);
    if (req.limit !== undefined) query = query.limit(req.limit);
    return (await query.execute()).map(rowToTask);
  }

  async startTask(req: StartTaskRequest): Promise<Task> {
    return this.#ctx.mutate('startTask', async (tx) => {
      const before = await requireTask(tx, req.task_guid, req.expected);
      assertTaskTransition(before.state, 'RUNNING', req.task_guid);
      return replaceTask(tx, before, { ...before, state: 'RUNNING', cell_id: req.cell_id });
    });
  }

  async completeTask(req: CompleteTaskRequest): Promise<Task> {
    return this.#ctx.mutate('completeTask', async (tx) => {
      const before = await requireTask(tx, req.task_guid, req.expected);
      assertTaskTransition(before.state, 'COMPLETED', req.task_guid);
      if (before.state !== 'RUNNING' || before.cell_id !== req.cell_id) {
        throw new BerthError(
          'conflict',
          `Cannot complete task "${req.task_guid}" from cell "${req.cell_id}": it is ${before.state}${before.cell_id ? ` on cell "${before.cell_id}"` : ''}`,
          { kind: 'Task', id: req.task_guid, current: before },
        );
      }
      return replaceTask(tx, before, {
        ...before,
        state: 'COMPLETED',
        failed: req.failed,
        failure_reason: req.failed ? req.failure_reason : '',
        result: req.failed ? '' : req.result,
        first_completed_at: before.first_completed_at ?? tx.now,
      });
    });
  }

  async failTask(req: FailTaskRequest): Promise<Task> {
    return this.#ctx.mutate('failTask', async (tx) => {
      const before = await requireTask(tx, req.task_guid, req.expected);
      return this.#completeAsFailed(tx, before, req.failure_reason);
    });
  }

  async cancelTask(req: CancelTaskRequest): Promise<Task> {
    return this.#ctx.mutate('cancelTask', async (tx) => {
      const before = await requireTask(tx, req.task_guid, req.expected);
      const after = await this.#completeAsFailed(tx, before, 'task was cancelled');
      if (before.state === 'RUNNING') {
        await recordStop(tx, 'task', {
          process_guid: before.task_guid,
          index: 0,
          instance_guid: before.task_guid,
          cell_id: before.cell_id,
        });
      }
      return after;
    });
  }

  async resolvingTask(req: CasTaskRequest): Promise<Task> {
    return this.#ctx.mutate('resolvingTask', async (tx) => {
      const before = await requireTask(tx, req.task_guid, req.expected);
      assertTaskTransition(before.state, 'RESOLVING', req.task_guid);
      return replaceTask(tx, before, { ...before, state: 'RESOLVING' });
    });
  }

  async demoteResolvingTask(req: CasTaskRequest): Promise<Task> {
    return this.#ctx.mutate('demoteResolvingTask', async (tx) => {
      const before = await requireTask(tx, req.task_guid, req.expected);
      if (before.state !== 'RESOLVING') {
        throw new BerthError(
          'conflict',
          `Cannot demote task "${req.task_guid}": current state is ${before.state}, not RESOLVING`,
          { kind: 'Task', id: req.task_guid, current: before },
        );
      }
      return replaceTask(tx, before, { ...before, state: 'COMPLETED' });
    });
  }

  async deleteTask(req: CasTaskRequest): Promise<void> {
    await this.#ctx.mutate('deleteTask', async (tx) => {
      const before = await requireTask(tx, req.task_guid, req.expected);
      if (!taskDeletableStates.includes(before.state)) {
        throw new BerthError(
          'illegal_transition',
          `Cannot delete task "${req.task_guid}": current state is ${before.state}, only COMPLETED or RESOLVING tasks are deleted`,
          { machine: 'Task', from: before.state, to: 'DELETED', subject: req.task_guid },
        );
      }
      await casWrite(
        async () => {
          const result = await tx.db
            .deleteFrom('tasks')
            .where('task_guid', '=', before.task_guid)
            .where('tag_epoch', '=', before.modification_tag.epoch)
            .where('tag_index', '=', before.modification_tag.index)
            .executeTakeFirst();
          return result.numDeletedRows;
        },
        taskCasTarget(tx, before.task_guid, req.expected),
      );
      // Its outputs go with it (docs/tasks.md, "Outputs").
      await deleteTaskOutputs(tx.db, before.task_guid);
      tx.events.push({ type: 'task_removed', task: before });
    });
  }

  async #completeAsFailed(tx: Tx, before: Task, reason: string): Promise<Task> {
    assertTaskTransition(before.state, 'COMPLETED', before.task_guid);
    if (before.state === 'RESOLVING') {
      throw new BerthError(
        'conflict',
        `Cannot fail task "${before.task_guid}": it already completed and is being resolved`,
        { kind: 'Task', id: before.task_guid, current: before },
      );
    }
    if (before.state === 'PENDING') {
      await tx.db
        .deleteFrom('start_requests')
        .where('kind', '=', 'task')
        .where('guid', '=', before.task_guid)
        .execute();
    }
    return replaceTask(tx, before, {
      ...before,
      state: 'COMPLETED',
      failed: true,
      failure_reason: reason,
      result: '',
      first_completed_at: before.first_completed_at ?? tx.now,
    });
  }
}

async function loadTask(reader: Reader, taskGuid: string, lock: boolean): Promise<Task | undefined> {
  let query = reader.db.selectFrom('tasks').selectAll().where('task_guid', '=', taskGuid);
  if (lock && reader.lockRows) query = query.forUpdate();
  const row = await query.executeTakeFirst();
  return row ? rowToTask(row) : undefined;
}

async function requireTask(tx: Tx, taskGuid: string, expected: ModificationTag | undefined): Promise<Task> {
  return requireTag(await loadTask(tx, taskGuid, true), 'Task', taskGuid, expected);
}

function taskCasTarget(tx: Tx, taskGuid: string, expected: ModificationTag): CasTarget<Task> {
  return { kind: 'Task', id: taskGuid, expected, reload: () => loadTask(tx, taskGuid, false) };
}

async function replaceTask(tx: Tx, before: Task, changes: Task): Promise<Task> {
  const after: Task = {
    ...changes,
    updated_at: tx.now,
    modification_tag: nextTag(before.modification_tag),
  };
  const { task_guid, ...row } = taskToRow(after);
  await casWrite(
    async () => {
      const result = await tx.db
        .updateTable('tasks')
        .set(row)
        .where('task_guid', '=', task_guid)
        .where('tag_epoch', '=', before.modification_tag.epoch)
        .where('tag_index', '=', before.modification_tag.index)
        .executeTakeFirst();
      return result.numUpdatedRows;
    },
    taskCasTarget(tx, task_guid, before.modification_tag),
  );
  tx.events.push({ type: 'task_changed', before, after });
  return after;
}
