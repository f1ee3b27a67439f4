import type {} from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { Name, PageQuery, pageOfWhole } from '../../core/index.js';
import { historyOperations } from '../../history/index.js';
import { createdThenId } from '../page-query.js';
import { userOf } from './auth-hook.js';
import { roles } from './roles.js';
import type { TokenStore } from './token-store.js';

const TokenBody = Type.Object(
  {
    role: Type.Union(roles.map((r) => Type.Literal(r))),
    name: Type.Optional(Name()),
    /** Seconds the token works for (at most ten years); absent: until it is revoked. */
    expires_in_s: Type.Optional(Type.Integer({ minimum: 1, maximum: 315_360_000 })),
  },
  { additionalProperties: false },
);
const IdParams = Type.Object({ id: Name() });

/**
 * `GET /v1/whoami`, and the admin's token routes (create, list, revoke). Without a token store
 * (`auth: 'none'`) only whoami answers, and the token routes are a 404.
 */
export async function registerTokenRoutes(
  root: FastifyInstance,
  tokens: TokenStore | undefined,
): Promise<void> {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  app.get(
    '/v1/whoami',
    { schema: { tags: ['tokens'], summary: "The caller's user and role" } },
    async (request) => request.principal ?? { user: 'anonymous', role: 'admin', token_id: null },
  );

  if (!tokens) return;
  const admin = { minRole: 'admin' as const };
  app.post(
    historyOperations.createToken.path,
    {
      config: admin,
      schema: { tags: ['tokens'], summary: 'Create an API token (shown once)', body: TokenBody },
    },
    async (request, reply) => {
      const created = await tokens.create({
        role: request.body.role,
        ...(request.body.name !== undefined ? { name: request.body.name } : {}),
        ...(request.body.expires_in_s !== undefined ? { expires_in_s: request.body.expires_in_s } : {}),
        created_by: userOf(request),
      });
      return reply.code(201).send(created);
    },
  );
  app.get(
    '/v1/tokens',
    {
      config: admin,
      schema: {
        tags: ['tokens'],
        summary: 'API tokens (never their secrets), oldest first, a page at a time: { tokens, next_cursor? }',
        querystring: PageQuery,
      },
    },
    async (request) => pageOfWhole('tokens', await tokens.list(), request.query, createdThenId),
  );
  app.delete(
    '/v1/tokens/:id',
    { config: admin, schema: { tags: ['tokens'], summary: 'Revoke a token', params: IdParams } },
    async (request, reply) => {
      await tokens.revoke(request.params.id);
      return reply.code(204).send();
    },
  );
}
