import type {} from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { type Static, Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply } from 'fastify';
import {
  BerthError,
  checkCallbackUrl,
  DurationMs,
  decodeCursor,
  defaultPageSize,
  InvalidArgumentError,
  isString,
  maxPageSize,
  Name,
  NameOrEmpty,
  pageOfWhole,
  parsePageLimit,
  toPage,
} from '../../core/index.js';
import type { ActualLRPPageKey, BbsStore } from '../bbs-store.js';
import {
  defaultWorkMemoryMb,
  type ModificationTag,
  type Monitor,
  publicCellPresence,
  type Task,
  type TaskState,
} from '../bbs-types.js';
import { CasConflictError, formatTag, parseTag } from '../cas-conflict-error.js';
import { taskDeliveryLogFor, toTaskDelivery } from '../task-callback-log.js';
import { type BbsOperationName, bbsOperationPaths } from './bbs-operations.js';
import type { BbsRoutesOptions } from './bbs-routes-options.js';
import {
  DesiredLRPDefinitionSchema,
  DesiredLRPUpdateSchema,
  type MonitorSchema,
  operationBodies,
  TaskDefinitionSchema,
} from './bbs-schemas.js';
import { registerEventRoutes } from './event-routes.js';
import { bbsPublicOperations } from './public-operations.js';

export type { BbsRoutesOptions } from './bbs-routes-options.js';

/**
 * The BBS's HTTP API: the public routes of issue 3 (snake_case JSON, ETag/If-Match on
 * DesiredLRPs) and one internal POST route per store operation for reps, auctioneer and converger.
 */
export async function registerBbsRoutes(root: FastifyInstance, options: BbsRoutesOptions): Promise<void> {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  const { store } = options;
  const callbackTargets = { allowPrivate: options.allowPrivateCallbacks === true };
  /** Both ways in (public and internal) refuse a callback URL the server must not call. */
  const checkTaskCallback = (body: { completion_callback_url?: string | undefined } | undefined) => {
    const url = body?.completion_callback_url;
    if (url) checkCallbackUrl(url, 'completion_callback_url', callbackTargets);
  };

  // ---- DesiredLRPs

  app.post(
    bbsPublicOperations.desireLrp.path,
    {
      schema: {
        tags: ['desired_lrps'],
        summary: 'Desire an LRP: creates its UNCLAIMED ActualLRPs and start requests',
        body: DesiredLRPDefinitionSchema,
      },
    },
    async (request, reply) => {
      const b = request.body;
      const desired = await store.desireLRP({
        process_guid: b.process_guid,
        domain: b.domain,
        instances: b.instances,
        image: b.image,
        ...(b.command !== undefined ? { command: b.command } : {}),
        env: b.env ?? {},
        memory_mb: b.memory_mb ?? defaultWorkMemoryMb,
        disk_mb: b.disk_mb ?? 0,
        ports: b.ports ?? [],
        routes: b.routes ?? {},
        annotation: b.annotation ?? '',
        ...(b.monitor !== undefined ? { monitor: withMonitorDefaults(b.monitor) } : {}),
        start_timeout_s: b.start_timeout_s ?? 60,
        placement_tags: b.placement_tags ?? [],
      });
      return reply.code(201).header('etag', etag(desired.modification_tag)).send(desired);
    },
  );

  app.get(
    bbsPublicOperations.listDesiredLrps.path,
    {
      schema: {
        tags: ['desired_lrps'],
        summary: 'DesiredLRPs by process_guid, a page at a time: { desired_lrps, next_cursor? }',
        querystring: Type.Object(
          { domain: Type.Optional(NameOrEmpty()), ...PageQuery },
          { additionalProperties: false },
        ),
      },
    },
    async (request) => {
      const { domain, limit: rawLimit, cursor } = request.query;
      const limit = parsePageLimit(rawLimit);
      const after = decodeCursor(cursor, isString);
      const rows = await store.listDesiredLRPs({
        ...(domain !== undefined ? { domain } : {}),
        limit: limit + 1,
        ...(after !== undefined ? { after } : {}),
      });
      return toPage('desired_lrps', rows, limit, (d) => d.process_guid);
    },
  );

  const ProcessGuidParams = Type.Object({ process_guid: Name() });
  const IfMatch = Type.Object({ 'if-match': Type.Optional(Type.String()) });

  app.get(
    bbsPublicOperations.getDesiredLrp.path,
    { schema: { tags: ['desired_lrps'], params: ProcessGuidParams } },
    async (request, reply) => {
      const desired = await store.getDesiredLRP({ process_guid: request.params.process_guid });
      return reply.header('etag', etag(desired.modification_tag)).send(desired);
    },
  );

  app.patch(
    bbsPublicOperations.updateDesiredLrp.path,
    {
      schema: {
        tags: ['desired_lrps'],
        summary: 'Update instances, routes or annotation; If-Match: <ETag> makes it a CAS (412 when stale)',
        params: ProcessGuidParams,
        headers: IfMatch,
        body: DesiredLRPUpdateSchema,
      },
    },
    async (request, reply) => {
      const expected = ifMatch(request.headers['if-match']);
      const update = stripUndefined(request.body);
      const desired = await asPrecondition(() =>
        store.updateDesiredLRP({
          process_guid: request.params.process_guid,
          ...(expected ? { expected } : {}),
          update,
        }),
      );
      return reply.header('etag', etag(desired.modification_tag)).send(desired);
    },
  );

  app.delete(
    bbsPublicOperations.removeDesiredLrp.path,
    {
      schema: {
        tags: ['desired_lrps'],
        summary: 'Remove a DesiredLRP and retire all its ActualLRPs',
        params: ProcessGuidParams,
        headers: IfMatch,
      },
    },
    async (request, reply) => {
      const expected = ifMatch(request.headers['if-match']);
      await asPrecondition(() =>
        store.removeDesiredLRP({
          process_guid: request.params.process_guid,
          ...(expected ? { expected } : {}),
        }),
      );
      return reply.code(204).send();
    },
  );

  // ---- ActualLRPs, tasks, cells, domains, leases (reads and consumer actions)

  app.get(
    bbsPublicOperations.listActualLrps.path,
    {
      schema: {
        tags: ['actual_lrps'],
        summary:
          'ActualLRPs, evacuating copies included (evacuating: true), a page at a time: { actual_lrps, next_cursor? }',
        querystring: Type.Object(
          {
            process_guid: Type.Optional(Type.String()),
            domain: Type.Optional(Type.String()),
            cell_id: Type.Optional(Type.String()),
            ...PageQuery,
          },
          { additionalProperties: false },
        ),
      },
    },
    async (request) => {
      const { limit: rawLimit, cursor, ...filter } = stripUndefined(request.query);
      const limit = parsePageLimit(rawLimit);
      const after = decodeCursor(cursor, isActualLRPPageKey);
      const rows = await store.listActualLRPs({
        ...filter,
        limit: limit + 1,
        ...(after !== undefined ? { after } : {}),
      });
      return toPage('actual_lrps', rows, limit, (a) => ({
        process_guid: a.process_guid,
        index: a.index,
        evacuating: a.evacuating === true,
      }));
    },
  );

  const TaskQuery = Type.Object(
    {
      domain: Type.Optional(NameOrEmpty()),
      cell_id: Type.Optional(NameOrEmpty()),
      state: Type.Optional(
        Type.Union(['PENDING', 'RUNNING', 'COMPLETED', 'RESOLVING'].map((s) => Type.Literal(s))),
      ),
      ...PageQuery,
    },
    { additionalProperties: false },
  );
  app.get(
    bbsPublicOperations.listTasks.path,
    {
      schema: {
        tags: ['tasks'],
        summary: 'Tasks by task_guid, a page at a time: { tasks, next_cursor? }',
        querystring: TaskQuery,
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
      return asPrecondition(() =>
        store.cancelTask({ task_guid: request.params.task_guid, ...(expected ? { expected } : {}) }),
      );
    },
  );

  const SmallListQuery = Type.Object(PageQuery, { additionalProperties: false });
  app.get(
    bbsPublicOperations.listCells.path,
    {
      schema: {
        tags: ['cells'],
        summary: 'Live cells: { cells, next_cursor? }',
        querystring: SmallListQuery,
      },
    },
    async (request) =>
      pageOfWhole(
        'cells',
        (await store.listCells()).map(publicCellPresence),
        request.query,
        (c) => c.cell_id,
      ),
  );
  app.get(
    bbsPublicOperations.listDomains.path,
    {
      schema: {
        tags: ['domains'],
        summary: 'Fresh domains: { domains, next_cursor? }',
        querystring: SmallListQuery,
      },
    },
    async (request) => pageOfWhole('domains', await store.listDomains(), request.query, (d) => d.domain),
  );
  app.put(
    bbsPublicOperations.upsertDomain.path,
    {
      schema: {
        tags: ['domains'],
        params: Type.Object({ domain: Name() }),
        body: Type.Object({ ttl_ms: DurationMs() }, { additionalProperties: false }),
      },
    },
    async (request) => store.upsertDomain({ domain: request.params.domain, ttl_ms: request.body.ttl_ms }),
  );
  app.get(
    '/v1/leases',
    {
      schema: {
        tags: ['leases'],
        summary: 'Singleton leases and holders: { leases, next_cursor? }',
        querystring: SmallListQuery,
      },
    },
    async (request) => pageOfWhole('leases', await store.listLeases(), request.query, (l) => l.name),
  );

  // ---- internal: one route per store operation, for reps, auctioneer and converger

  for (const name of Object.keys(bbsOperationPaths) as BbsOperationName[]) {
    app.post(
      bbsOperationPaths[name],
      { schema: { tags: ['internal'], summary: `BbsStore.${name}`, body: operationBodies[name] } },
      async (request, reply: FastifyReply) => {
        if (name === 'desireTask') checkTaskCallback(request.body as { completion_callback_url?: string });
        const operation = store[name] as (req: unknown) => Promise<unknown>;
        const result = await operation.call(store, request.body ?? {});
        if (result === undefined) return reply.code(204).send();
        const hide = withoutRepTokens[name];
        return reply.send(hide ? hide(result) : result);
      },
    );
  }

  registerEventRoutes(app, options);
}

/**
 * The operations whose answers carry cell presences, and how to drop the reps' tokens from them:
 * those tokens are for the server's own auctioneer and converger, never for a caller of the API
 * (a viewer with a rep's token could evacuate its cell). `bbs-routes.test.ts` checks every route.
 */
const withoutRepTokens: Partial<Record<BbsOperationName, (result: unknown) => unknown>> = {
  heartbeatCell: (r) => publicCellPresence(r as Awaited<ReturnType<BbsStore['heartbeatCell']>>),
  listCells: (r) => (r as Awaited<ReturnType<BbsStore['listCells']>>).map(publicCellPresence),
  readSnapshot: (r) => {
    const snapshot = r as Awaited<ReturnType<BbsStore['readSnapshot']>>;
    return { ...snapshot, cells: snapshot.cells.map(publicCellPresence) };
  },
  readConvergenceSnapshot: (r) => {
    const snapshot = r as Awaited<ReturnType<BbsStore['readConvergenceSnapshot']>>;
    return { ...snapshot, cells: snapshot.cells.map(publicCellPresence) };
  },
};

/** `limit` + `cursor` of every list route, as the container list has them (docs/bbs.md, Paging). */
const PageQuery = {
  limit: Type.Optional(
    Type.String({
      maxLength: 16,
      description: `page size, 1 to ${maxPageSize} (default ${defaultPageSize})`,
    }),
  ),
  cursor: Type.Optional(Type.String({ maxLength: 1024, description: 'next_cursor of the previous page' })),
};

function isActualLRPPageKey(value: unknown): value is ActualLRPPageKey {
  const key = value as Partial<ActualLRPPageKey> | null;
  return (
    typeof key === 'object' &&
    key !== null &&
    isString(key.process_guid) &&
    Number.isSafeInteger(key.index) &&
    (key.index ?? -1) >= 0 &&
    typeof key.evacuating === 'boolean'
  );
}

export function etag(tag: ModificationTag): string {
  return `"${formatTag(tag)}"`;
}

function ifMatch(header: string | undefined): ModificationTag | undefined {
  if (header === undefined || header.trim() === '*') return undefined;
  const tag = parseTag(header);
  if (!tag) {
    throw new InvalidArgumentError(
      `Invalid If-Match header "${header}": expected an ETag this API returned`,
      {
        field: 'if-match',
      },
    );
  }
  return tag;
}

/** On the public routes a stale If-Match is HTTP's 412, not the internal routes' 409. */
async function asPrecondition<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof CasConflictError) {
      throw new BerthError('precondition_failed', `${err.message}; read it again and retry`, err.details);
    }
    throw err;
  }
}

function withMonitorDefaults(monitor: Static<typeof MonitorSchema>): Monitor {
  if ('http' in monitor) return { http: { port: monitor.http.port, path: monitor.http.path ?? '/' } };
  return monitor;
}

function stripUndefined<T extends object>(value: T): { [K in keyof T]: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as {
    [K in keyof T]: Exclude<T[K], undefined>;
  };
}
