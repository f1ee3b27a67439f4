import type { FastifyInstance } from 'fastify';
import type { RouteDeps } from './route-module.js';

/**
 * What operators and their tools read of the server itself: the OpenAPI document (of every route
 * registered before it, so this module comes last), Prometheus metrics, and liveness.
 */
export async function registerOperationsRoutes(app: FastifyInstance, deps: RouteDeps): Promise<void> {
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
    const text = await deps.metrics.registry.metrics();
    return reply.header('content-type', deps.metrics.registry.contentType).send(text);
  });
  app.get(
    '/healthz',
    { schema: { tags: ['health'], summary: 'Liveness: answers once the store answers' } },
    async () => {
      await deps.store.listLeases();
      return { status: 'ok', ...(deps.health?.() ?? {}) };
    },
  );
}
