import type {} from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { BerthError, decodeCursor, isString, Name, parsePageLimit, toPage } from '../../core/index.js';
import { defaultWorkMemoryMb, type Task, type TaskState } from '../bbs-types.js';
import { taskDeliveryLogFor, toTaskDelivery } from '../task-callback-log.js';
import {
  asPrecondition,
  etag,
  IfMatch,
  ifMatch,
  stripUndefined,
  taskCallbackCheck,
} from './bbs-route-support.js';
import type { BbsRoutesOptions } from './bbs-routes-options.js';
import { TaskDefinitionSchema } from './bbs-schemas.js';
import { TaskListQuery } from './list-query-schemas.js';
import { bbsPublicOperations } from './public-operations.js';
import { refuseSystemOwned } from './system-ownership.js';
import { noteUserWrite } from './user-writes.js';

/** Tasks: create (callback URL checked), list, read with its delivery log, resolve, delete, cancel. */
export function registerTaskRoutes(root: FastifyInstance, options: BbsRoutesOptions): void {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  const { store } = options;
  const checkTaskCallback = taskCallbackCheck(options);
  app.get(
    bbsPublicOperations.listTasks.path,
    {
      schema: {
        tags: ['tasks'],
        summary: 'Tasks by task_guid, a page at a time: { tasks, next_cursor? }',
        querystring: TaskListQuery,
      },
    },
    async (request) => {
      const { state, limit: rawLimit, cursor, ...rest } = stripUndefined(request.query);
      const limit = parsePageLimit(rawLimit);
      const after = decodeCursor(cursor, isString);
      const rows = await store.listTasks({
        ...rest,
        ...(state !== undefined ? { state: state as TaskState } : {}),
        limit: limit + 1,
        ...(after !== undefined ? { after } : {}),
      });
      return toPage('tasks', rows, limit, (t) => t.task_guid);
    },
  );

  app.post(
    bbsPublicOperations.desireTask.path,
    { schema: { tags: ['tasks'], body: TaskDefinitionSchema } },
    async (request, reply) => {
      const b = request.body;
      checkTaskCallback(b);
      await refuseSystemOwned(store, 'desire-task', { domain: b.domain });
      const task = await store.desireTask({
        task_guid: b.task_guid,
        domain: b.domain,
        image: b.image,
        ...(b.command !== undefined ? { command: b.command } : {}),
        env: b.env ?? {},
        memory_mb: b.memory_mb ?? defaultWorkMemoryMb,
        disk_mb: b.disk_mb ?? 0,
        result_file: b.result_file ?? '',
        completion_callback_url: b.completion_callback_url ?? '',
        placement_tags: b.placement_tags ?? [],
        ...(b.outputs !== undefined ? { outputs: b.outputs } : {}),
        ...(b.outputs_max_bytes !== undefined ? { outputs_max_bytes: b.outputs_max_bytes } : {}),
        ...(b.volumes !== undefined ? { volumes: b.volumes } : {}),
      });
      return reply.code(201).header('etag', etag(task.modification_tag)).send(task);
    },
  );

  const TaskParams = Type.Object({ task_guid: Name() });
  const deliveryLog = options.taskDeliveries ?? taskDeliveryLogFor(store);
  app.get(
    bbsPublicOperations.getTask.path,
    {
      schema: {
        tags: ['tasks'],
        summary: 'A task, with its completion-callback delivery log (`deliveries`) while it exists',
        params: TaskParams,
      },
    },
    async (request, reply) => {
      const task: Task = await store.getTask({ task_guid: request.params.task_guid });
      const deliveries = deliveryLog
        ? (
            await deliveryLog.list({ task_guid: task.task_guid, task_epoch: task.modification_tag.epoch })
          ).map(toTaskDelivery)
        : [];
      return reply.header('etag', etag(task.modification_tag)).send({ ...task, deliveries });
    },
  );
  app.get(
    bbsPublicOperations.taskDeliveries.path,
    {
      schema: {
        tags: ['tasks'],
        summary:
          'Every logged callback attempt for this guid, also after the task was deleted (kept for the retention period)',
        params: TaskParams,
      },
    },
    async (request) => ({
      deliveries: deliveryLog ? await deliveryLog.list({ task_guid: request.params.task_guid }) : [],
    }),
  );
  app.post(
    bbsPublicOperations.resolveTask.path,
    {
      schema: {
        tags: ['tasks'],
        summary: 'COMPLETED → RESOLVING: the consumer took the result; then DELETE the task',
        params: TaskParams,
        headers: IfMatch,
      },
    },
    async (request, reply) => {
      const expected = ifMatch(request.headers['if-match']);
      const guid = request.params.task_guid;
      await refuseSystemOwned(store, 'resolve-task', { task_guid: guid });
      // Only a caller's own If-Match makes a lost CAS a 412; without one it is the usual 409.
      const task = expected
        ? await asPrecondition(() => store.resolvingTask({ task_guid: guid, expected }))
        : await store.resolvingTask({
            task_guid: guid,
            expected: (await store.getTask({ task_guid: guid })).modification_tag,
          });
      return reply.header('etag', etag(task.modification_tag)).send(task);
    },
  );
  app.delete(
    bbsPublicOperations.deleteTask.path,
    {
      schema: {
        tags: ['tasks'],
        summary: 'Delete a RESOLVING task (resolve it first, as Diego asks)',
        params: TaskParams,
        headers: IfMatch,
      },
    },
    async (request, reply) => {
      const expected = ifMatch(request.headers['if-match']);
      await refuseSystemOwned(store, 'delete-task', { task_guid: request.params.task_guid });
      const current = await store.getTask({ task_guid: request.params.task_guid });
      if (current.state !== 'RESOLVING') {
        throw new BerthError(
          'illegal_transition',
          `Cannot delete task "${current.task_guid}": it is ${current.state}; only a RESOLVING task is deleted (POST /v1/tasks/${current.task_guid}/resolve first)`,
          { machine: 'Task', from: current.state, to: 'DELETED', subject: current.task_guid },
        );
      }
      if (expected) await asPrecondition(() => store.deleteTask({ task_guid: current.task_guid, expected }));
      else await store.deleteTask({ task_guid: current.task_guid, expected: current.modification_tag });
      return reply.code(204).send();
    },
  );
  app.post(
    bbsPublicOperations.cancelTask.path,
    { schema: { tags: ['tasks'], params: TaskParams, headers: IfMatch } },
    async (request) => {
      const expected = ifMatch(request.headers['if-match']);
      const guid = request.params.task_guid;
      await refuseSystemOwned(store, 'cancel-task', { task_guid: guid });
      // Only a RUNNING task has a container on a cell for the cancel to stop.
      const running = options.onUserWrite
        ? (await store.getTask({ task_guid: guid })).state === 'RUNNING'
        : false;
      const task = await asPrecondition(() =>
        store.cancelTask({ task_guid: guid, ...(expected ? { expected } : {}) }),
      );
      await noteUserWrite(options.onUserWrite, request, {
        status: 'stop',
        containers: running ? [guid] : [],
        message: `task ${guid} cancelled`,
      });
      return task;
    },
  );
}
