import type {} from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { type Static, Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import {
  Argv,
  ExitCode,
  ImageRef,
  limits,
  Message,
  Name,
  NameOrEmpty,
  PageQuery,
  pageOfWhole,
  Url,
} from '../core/index.js';
import {
  ContainerListQuery,
  type HistoryStore,
  historyOperations,
  type IngestRecord,
  recordUserAction,
  type WebhookSubscriptions,
} from '../history/index.js';
import { userOf } from './auth/auth-hook.js';
import { registerTokenRoutes } from './auth/token-routes.js';
import type { TokenStore } from './auth/token-store.js';
import { createdThenId } from './page-query.js';

const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);
const strict = { additionalProperties: false } as const;
/** An ISO-8601 time; the history store parses it and says what is wrong with it. */
const Timestamp = Type.String({ minLength: 1, maxLength: 64 });

const LaunchSchema = Type.Object(
  {
    type: Type.Literal('launch'),
    container: Type.Object(
      {
        id: Name(),
        image: ImageRef({ minLength: 0 }),
        command: Argv(),
        env_names: Type.Array(NameOrEmpty(), { maxItems: limits.maxEnvVars }),
        cell_id: NameOrEmpty(),
        owner_kind: Type.Union([
          Type.Literal('lrp'),
          Type.Literal('task'),
          Type.Literal('system'),
          Type.Literal('direct'),
        ]),
        owner_id: NameOrEmpty(),
        system: Type.Union([NameOrEmpty(), Type.Null()]),
      },
      strict,
    ),
    external_timestamp: Timestamp,
    entity_type: Type.Optional(Type.Union([Type.Literal('system'), Type.Literal('user')])),
    entity_id: Type.Optional(Nullable(NameOrEmpty())),
    domain: Type.Optional(NameOrEmpty()),
  },
  strict,
);
const EventSchema = Type.Object(
  {
    type: Type.Literal('event'),
    container_id: Name(),
    event: Name(),
    external_timestamp: Nullable(Timestamp),
    exit_code: Type.Optional(Type.Union([ExitCode(), Type.Null()])),
    message: Type.Optional(Nullable(Message())),
    entity_type: Type.Union([Type.Literal('event'), Type.Literal('service')]),
  },
  strict,
);
const ItemSchema = Type.Object(
  {
    type: Type.Literal('item'),
    container_id: Name(),
    status: Name(),
    // `user`: a user's action on this machine a cell delivers (`berth stop` of a pod, with the OS
    // user), trusted as far as launches' `entity_id` already are: the caller is an operator.
    entity_type: Type.Union([
      Type.Literal('system'),
      Type.Literal('event'),
      Type.Literal('service'),
      Type.Literal('user'),
    ]),
    entity_id: Type.Optional(Nullable(NameOrEmpty())),
    message: Type.Optional(Nullable(Message())),
    external_timestamp: Type.Optional(Nullable(Timestamp)),
    exit_code: Type.Optional(Type.Union([ExitCode(), Type.Null()])),
  },
  strict,
);
const FinalizationSchema = Type.Object(
  {
    type: Type.Literal('finalization'),
    container_id: Name(),
    exit_code: Type.Union([ExitCode(), Type.Null()]),
    logs: Type.String({ maxLength: limits.maxLogsLength }),
    logs_size: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }),
    logs_truncated: Type.Boolean(),
    outputs: Type.Array(
      Type.Object(
        {
          name: NameOrEmpty(),
          path: Url(),
          size: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }),
          content: Nullable(Type.String({ maxLength: limits.maxLogsLength })),
        },
        strict,
      ),
      { maxItems: limits.maxArgs },
    ),
    error: Nullable(Message()),
    failure: Type.Optional(Nullable(Message())),
    stopped: Type.Optional(Nullable(Message())),
  },
  strict,
);
const IngestBody = Type.Object(
  {
    records: Type.Array(Type.Union([LaunchSchema, EventSchema, ItemSchema, FinalizationSchema]), {
      maxItems: 5000,
    }),
  },
  strict,
);

const IdParams = Type.Object({ id: Name() });
const UserActionBody = Type.Object(
  {
    status: Name(),
    message: Type.Optional(Message()),
  },
  strict,
);
const SubscriptionBody = Type.Object(
  {
    url: Url({ minLength: 1 }),
    statuses: Type.Optional(Type.Array(Name(), { maxItems: limits.maxPlacementTags })),
  },
  strict,
);
export interface HistoryRoutesOptions {
  readonly history: HistoryStore;
  readonly webhooks: WebhookSubscriptions;
  /** Absent with `auth: 'none'`: the token routes then answer 404. */
  readonly tokens?: TokenStore;
  readonly now?: () => Date;
  /** The system owning a BBS domain, or null: fills the system of launches cells report without one. */
  readonly systemOfDomain?: (domain: string) => Promise<string | null>;
}

/**
 * Container history, ingest from cells, webhook subscriptions, and (src/api/auth) whoami and the
 * API tokens (issue 6). The bus
 * itself is `GET /v1/events` of the BBS: every recorded item is also a `container_status_changed`
 * event there.
 */
export async function registerHistoryRoutes(
  root: FastifyInstance,
  options: HistoryRoutesOptions,
): Promise<void> {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  const { history, webhooks } = options;
  const now = options.now ?? (() => new Date());

  app.get(
    historyOperations.listContainers.path,
    {
      schema: {
        tags: ['containers'],
        summary: 'Every container berth ran, newest first; filter by status, system, since; cursor pages',
        querystring: ContainerListQuery,
      },
    },
    async (request) => {
      const q = request.query;
      return history.listContainers({
        ...(q.status !== undefined ? { status: q.status } : {}),
        ...(q.system !== undefined ? { system: q.system } : {}),
        ...(q.since !== undefined ? { since: q.since } : {}),
        ...(q.limit !== undefined ? { limit: Number(q.limit) } : {}),
        ...(q.cursor !== undefined ? { cursor: q.cursor } : {}),
      });
    },
  );

  app.get(
    historyOperations.getContainer.path,
    {
      schema: {
        tags: ['containers'],
        summary: 'A container record with its whole history',
        params: IdParams,
      },
    },
    async (request) => history.getContainer(request.params.id),
  );

  app.get(
    historyOperations.getContainerLogs.path,
    {
      schema: {
        tags: ['containers'],
        summary: 'Logs stored at finalization (kept after the pod is gone)',
        params: IdParams,
      },
    },
    async (request) => history.getLogs(request.params.id),
  );

  app.post(
    historyOperations.ingestContainerEvents.path,
    {
      schema: {
        tags: ['containers'],
        summary: 'Ingest a batch of journaled observations from a cell (idempotent)',
        body: IngestBody,
      },
    },
    async (request) =>
      history.ingest(await withSystems(request.body.records as IngestRecord[], options.systemOfDomain)),
  );

  app.post(
    historyOperations.recordContainerAction.path,
    {
      schema: {
        tags: ['containers'],
        summary: "Record a user's action on a container (entity_type user, the caller's id)",
        params: IdParams,
        body: UserActionBody,
      },
    },
    async (request) =>
      recordUserAction(history, {
        container_id: request.params.id,
        status: request.body.status,
        user_id: userOf(request),
        ...(request.body.message !== undefined ? { message: request.body.message } : {}),
        at: now(),
      }),
  );

  app.post(
    historyOperations.subscribe.path,
    {
      schema: {
        tags: ['subscriptions'],
        summary: 'Subscribe a webhook URL to container status changes (empty statuses = all)',
        body: SubscriptionBody,
      },
    },
    async (request, reply) => {
      const sub = await webhooks.create({ ...request.body, created_by: userOf(request) });
      return reply.code(201).send(sub);
    },
  );
  app.get(
    '/v1/subscriptions',
    {
      schema: {
        tags: ['subscriptions'],
        summary: 'Active subscriptions, oldest first, a page at a time: { subscriptions, next_cursor? }',
        querystring: PageQuery,
      },
    },
    async (request) => pageOfWhole('subscriptions', await webhooks.list(), request.query, createdThenId),
  );
  app.get(
    historyOperations.getSubscription.path,
    {
      schema: { tags: ['subscriptions'], summary: 'A subscription with its delivery log', params: IdParams },
    },
    async (request) => webhooks.get(request.params.id),
  );
  app.delete(
    '/v1/subscriptions/:id',
    { schema: { tags: ['subscriptions'], summary: 'Remove a subscription', params: IdParams } },
    async (request, reply) => {
      await webhooks.remove(request.params.id);
      return reply.code(204).send();
    },
  );

  await registerTokenRoutes(root, options.tokens);
}

export type IngestBodyType = Static<typeof IngestBody>;

/**
 * Launches a cell reported with their domain and no system get the system owning that domain
 * (issue 19: every container of a system carries it, so `ps --system` and the console find it).
 * One lookup per domain per batch.
 */
async function withSystems(
  records: IngestRecord[],
  systemOfDomain: ((domain: string) => Promise<string | null>) | undefined,
): Promise<IngestRecord[]> {
  if (!systemOfDomain) return records;
  const owners = new Map<string, Promise<string | null>>();
  const out: IngestRecord[] = [];
  for (const record of records) {
    if (record.type !== 'launch' || record.container.system !== null || !record.domain) {
      out.push(record);
      continue;
    }
    let owner = owners.get(record.domain);
    if (!owner) {
      owner = systemOfDomain(record.domain);
      owners.set(record.domain, owner);
    }
    const system = await owner;
    out.push(system === null ? record : { ...record, container: { ...record.container, system } });
  }
  return out;
}
