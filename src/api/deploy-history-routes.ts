import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { Name, PageQueryFields, pageOfWhole } from '../core/index.js';
import { deployHistoryOperations as ops, type SystemDeployer } from '../model/index.js';
import { userOf } from './auth/auth-hook.js';
import type { OnSystemAction } from './system-action-history.js';
import { ActionSchema } from './system-routes.js';

const DeployRecordSchema = Type.Object({
  id: Type.String(),
  kind: Type.Union([Type.Literal('deploy'), Type.Literal('teardown')]),
  path: Type.String(),
  state: Type.String({ description: 'running | succeeded | failed' }),
  reason: Type.String(),
  user: Type.String({ description: "The token's user name that asked for it" }),
  digest: Type.Union([Type.String(), Type.Null()], {
    description: 'sha256 of the canonical definition (secrets by keyed digest); null for a teardown',
  }),
  rollback_of: Type.Union([Type.String(), Type.Null()]),
  created_at: Type.String(),
  finished_at: Type.Union([Type.String(), Type.Null()]),
  secrets: Type.Record(Type.String(), Type.Array(Type.String()), {
    description: 'Secret variable names per service path; never their values',
  }),
});

/**
 * Seed 004's deploy history: `GET /v1/systems/{name}/deploys` (every deploy and teardown, oldest
 * first, a page at a time) and `POST /v1/systems/{name}/rollback` (an earlier definition again, as
 * a new deploy under the same locks: 409 naming the holder when one conflicts).
 */
export async function deployHistoryRoutes(
  root: FastifyInstance,
  deployer: SystemDeployer,
  onAction?: OnSystemAction,
): Promise<void> {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  app.get(
    ops.listDeploys.path,
    {
      schema: {
        tags: ['systems'],
        summary:
          'Every deploy and teardown of a system: digest, who, when, outcome ({ deploys, next_cursor? })',
        params: Type.Object({ name: Name() }),
        querystring: Type.Object(PageQueryFields, { additionalProperties: false }),
        response: {
          200: Type.Object({
            deploys: Type.Array(DeployRecordSchema),
            next_cursor: Type.Optional(Type.String()),
          }),
        },
      },
    },
    async (request) =>
      pageOfWhole(
        'deploys',
        await deployer.deploys(request.params.name),
        request.query,
        (d) => `${d.created_at} ${d.id}`,
      ),
  );
  app.post(
    ops.rollback.path,
    {
      schema: {
        tags: ['systems'],
        summary:
          'Redeploy an earlier definition (default: the last succeeded deploy before the current one) as a new deploy',
        params: Type.Object({ name: Name() }),
        body: Type.Optional(
          Type.Object({ deploy: Type.Optional(Name({ description: 'The deploy to go back to' })) }),
        ),
        response: { 202: ActionSchema },
      },
    },
    async (request, reply) => {
      const action = await deployer.rollback(request.params.name, request.body?.deploy, userOf(request));
      await onAction?.(request, action);
      return reply.code(202).send({ ...action, log: [...action.log] });
    },
  );
}
