import type {} from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { InvalidArgumentError, Name, PageQuery, pageOfWhole } from '../core/index.js';
import { entityActionKinds, type SystemDeployer, systemOperations } from '../model/index.js';
import { userOf } from './auth/auth-hook.js';
import type { OnSystemAction } from './system-action-history.js';

/** A lifecycle action as every route answers it: a deploy, a teardown or a per-entity operation. */
export const ActionSchema = Type.Object({
  id: Type.String(),
  system: Type.String(),
  kind: Type.Union(
    [Type.Literal('deploy'), Type.Literal('teardown'), ...entityActionKinds.map((k) => Type.Literal(k))],
    { description: 'deploy, teardown, or a per-entity operation (unit-destroy, service-scale, …)' },
  ),
  path: Type.String(),
  state: Type.Union([
    Type.Literal('accepted'),
    Type.Literal('in_progress'),
    Type.Literal('succeeded'),
    Type.Literal('failed'),
  ]),
  reason: Type.String(),
  owner: Type.String(),
  created_at: Type.String(),
  updated_at: Type.String(),
  finished_at: Type.Union([Type.String(), Type.Null()]),
  log: Type.Array(Type.String()),
  timeout_ms: Type.Integer({ description: 'How long it may last from created_at before it fails' }),
});

const count = Type.Integer({ minimum: 0 });

/** How far a live action got: `berth deploy --wait` draws it. */
const ProgressSchema = Type.Union([
  Type.Object({
    kind: Type.Literal('deploy'),
    services_ready: count,
    services_desired: count,
    instances_ready: count,
    instances_desired: count,
    jobs_completed: count,
    jobs_desired: count,
    waiting_on: Type.Array(Type.String()),
  }),
  Type.Object({
    kind: Type.Literal('teardown'),
    services: count,
    desired_lrps: count,
    instances: count,
    tasks: count,
  }),
]);

const ActionWithProgressSchema = Type.Intersect([
  ActionSchema,
  Type.Object({ progress: Type.Optional(ProgressSchema) }),
]);

/** An action's timeout: at least a second, at most a day (the CLI's `--timeout`). */
const timeoutBounds = { minimum: 1_000, maximum: 86_400_000 } as const;
const timeoutDescription = 'How long the action may last from its acceptance, in ms (default 10 min)';
const TimeoutMs = Type.Integer({ ...timeoutBounds, description: timeoutDescription });
/** The same in a query string (this server does not coerce types); `queryTimeout` checks the bounds. */
const TimeoutQuery = Type.String({ pattern: '^[0-9]{1,8}$', description: timeoutDescription });

function queryTimeout(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const ms = Number(text);
  if (ms < timeoutBounds.minimum || ms > timeoutBounds.maximum)
    throw new InvalidArgumentError(
      `timeout_ms must be between ${timeoutBounds.minimum} and ${timeoutBounds.maximum}`,
      { field: 'timeout_ms' },
    );
  return ms;
}

const DeployBodySchema = Type.Union([
  Type.Object(
    {
      definition: Type.Union([Type.String(), Type.Object({}, { additionalProperties: true })], {
        description: 'The system definition: its YAML text, or the same as a JSON object',
      }),
      path: Type.Optional(Name({ description: 'The subtree to deploy (default /)' })),
      timeout_ms: Type.Optional(TimeoutMs),
    },
    { additionalProperties: false },
  ),
  Type.String({ description: 'The YAML text itself (Content-Type application/yaml or text/plain)' }),
]);

const yamlTypes = ['application/yaml', 'application/x-yaml', 'text/yaml', 'text/x-yaml'];

/**
 * Seed 004's lifecycle actions and system status: `POST /v1/deploys`, `GET /v1/deploys/{id}`,
 * `POST /v1/systems/{name}/teardown`, `GET /v1/systems`, `GET /v1/systems/{name}`. A refused
 * definition is a 400 listing every problem (`details.problems`); a lock conflict is a 409 naming
 * the action holding it (`details.holder`).
 */
export function systemRoutes(
  deployer: SystemDeployer,
  onAction?: OnSystemAction,
): (app: FastifyInstance) => Promise<void> {
  return async (root) => {
    // Encapsulated: the YAML body parser applies to these routes only.
    await root.register(async (scope) => {
      scope.addContentTypeParser(yamlTypes, { parseAs: 'string' }, (_request, body, done) =>
        done(null, body),
      );
      const app = scope.withTypeProvider<TypeBoxTypeProvider>();

      app.post(
        systemOperations.deploy.path,
        {
          schema: {
            tags: ['systems'],
            summary:
              'Deploy a system (or the subtree at path): validated, locked, then executed by the server',
            querystring: Type.Object(
              { path: Type.Optional(Name()), timeout_ms: Type.Optional(TimeoutQuery) },
              { additionalProperties: false },
            ),
            body: DeployBodySchema,
            response: { 202: ActionSchema },
          },
        },
        async (request, reply) => {
          const body = request.body;
          const path = typeof body === 'string' ? request.query.path : (body.path ?? request.query.path);
          const definition = typeof body === 'string' ? body : body.definition;
          const fromQuery = queryTimeout(request.query.timeout_ms);
          const timeout = typeof body === 'string' ? fromQuery : (body.timeout_ms ?? fromQuery);
          const action = await deployer.deploy({
            definition,
            ...(path !== undefined ? { path } : {}),
            user: userOf(request),
            ...(timeout !== undefined ? { timeout_ms: timeout } : {}),
          });
          await onAction?.(request, action);
          return reply.code(202).send({ ...action, log: [...action.log] });
        },
      );

      app.get(
        systemOperations.getAction.path,
        {
          schema: {
            tags: ['systems'],
            summary:
              'A deploy or teardown: accepted, in_progress (with its progress), succeeded or failed (with the reason)',
            params: Type.Object({ id: Name() }),
            response: { 200: ActionWithProgressSchema },
          },
        },
        async (request) => {
          const { progress, ...action } = await deployer.actionProgress(request.params.id);
          const shown =
            progress?.kind === 'deploy' ? { ...progress, waiting_on: [...progress.waiting_on] } : progress;
          return { ...action, log: [...action.log], ...(shown ? { progress: shown } : {}) };
        },
      );

      app.post(
        systemOperations.teardown.path,
        {
          schema: {
            tags: ['systems'],
            summary:
              'Tear a system down: exclusive on /, so it fails at once while any deploy runs; force: its units are forced, no agent awaited (seed 003)',
            params: Type.Object({ name: Name() }),
            querystring: Type.Object(
              {
                timeout_ms: Type.Optional(TimeoutQuery),
                force: Type.Optional(Type.Union([Type.Literal('true'), Type.Literal('false')])),
              },
              { additionalProperties: false },
            ),
            response: { 202: ActionSchema },
          },
        },
        async (request, reply) => {
          const action = await deployer.teardown(request.params.name, {
            force: request.query.force === 'true',
            user: userOf(request),
            timeoutMs: queryTimeout(request.query.timeout_ms),
          });
          await onAction?.(request, action);
          return reply.code(202).send({ ...action, log: [...action.log] });
        },
      );

      app.get(
        systemOperations.listSystems.path,
        {
          schema: {
            tags: ['systems'],
            summary: 'Every system with its state, by name, a page at a time: { systems, next_cursor? }',
            querystring: PageQuery,
          },
        },
        async (request) => pageOfWhole('systems', await deployer.listSystems(), request.query, (s) => s.name),
      );

      app.get(
        systemOperations.getSystem.path,
        {
          schema: {
            tags: ['systems'],
            summary: 'A system: state, services with their units and cells, relations with their scopes',
            params: Type.Object({ name: Name() }),
          },
        },
        async (request) => deployer.status(request.params.name),
      );

      app.get(
        '/v1/relations',
        {
          schema: {
            tags: ['systems'],
            summary:
              "Relation data of the system units running on a cell: the cell's rep writes it into each container",
            querystring: Type.Object({ cell_id: Name() }, { additionalProperties: false }),
          },
        },
        async (request) => ({ units: await deployer.relationsForCell(request.query.cell_id) }),
      );

      app.get(
        '/v1/relations/:process_guid/:index',
        {
          schema: {
            tags: ['systems'],
            summary: "One system unit's relation data: what its container starts with (file and env)",
            // Path params arrive as strings (this server does not coerce types).
            params: Type.Object({
              process_guid: Name(),
              index: Type.String({ pattern: '^[0-9]{1,9}$' }),
            }),
          },
        },
        async (request) =>
          deployer.relationsForInstance(request.params.process_guid, Number(request.params.index)),
      );
    });
  };
}
