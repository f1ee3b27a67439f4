import type {} from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { Name, pageOfWhole } from '../core/index.js';
import { entityActionKinds, type SystemDeployer, systemOperations } from '../model/index.js';
import { userOf } from './auth/auth-hook.js';
import { PageQuery } from './page-query.js';

/** A lifecycle action as every route answers it: a deploy, a teardown or a per-entity operation. */
export const ActionSchema = Type.Object({
  id: Type.String(),
  system: Type.String(),
  kind: Type.Union(
    [Type.Literal('deploy'), Type.Literal('teardown'), ...entityActionKinds.map((k) => Type.Literal(k))],
    { description: 'deploy, teardown, or a per-entity operation (unit-destroy, service-scale, …)' },
  ),
  path: Type.String(),
  state: Type.Union([Type.Literal('running'), Type.Literal('succeeded'), Type.Literal('failed')]),
  reason: Type.String(),
  owner: Type.String(),
  created_at: Type.String(),
  updated_at: Type.String(),
  finished_at: Type.Union([Type.String(), Type.Null()]),
  log: Type.Array(Type.String()),
});

const DeployBodySchema = Type.Union([
  Type.Object(
    {
      definition: Type.Union([Type.String(), Type.Object({}, { additionalProperties: true })], {
        description: 'The system definition: its YAML text, or the same as a JSON object',
      }),
      path: Type.Optional(Name({ description: 'The subtree to deploy (default /)' })),
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
export function systemRoutes(deployer: SystemDeployer): (app: FastifyInstance) => Promise<void> {
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
            querystring: Type.Object({ path: Type.Optional(Name()) }, { additionalProperties: false }),
            body: DeployBodySchema,
            response: { 202: ActionSchema },
          },
        },
        async (request, reply) => {
          const body = request.body;
          const path = typeof body === 'string' ? request.query.path : (body.path ?? request.query.path);
          const definition = typeof body === 'string' ? body : body.definition;
          const action = await deployer.deploy({ definition, ...(path !== undefined ? { path } : {}) });
          return reply.code(202).send({ ...action, log: [...action.log] });
        },
      );

      app.get(
        systemOperations.getAction.path,
        {
          schema: {
            tags: ['systems'],
            summary: 'A deploy or teardown: running, succeeded or failed (with the reason)',
            params: Type.Object({ id: Name() }),
            response: { 200: ActionSchema },
          },
        },
        async (request) => {
          const action = await deployer.getAction(request.params.id);
          return { ...action, log: [...action.log] };
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
              { force: Type.Optional(Type.Union([Type.Literal('true'), Type.Literal('false')])) },
              { additionalProperties: false },
            ),
            response: { 202: ActionSchema },
          },
        },
        async (request, reply) => {
          const action = await deployer.teardown(request.params.name, {
            force: request.query.force === 'true',
            user: userOf(request),
          });
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
