import type { FastifyInstance } from 'fastify';
import { dashboardHtml, dashboardScript } from './dashboard-page.js';

/**
 * The dashboard: one static page and one script (no build step, no framework) that read the
 * public API with the token the user pastes or that `berth up` puts in the URL's fragment (never
 * sent to the server in the URL, only as a bearer header by the script).
 */
export async function dashboardPlugin(app: FastifyInstance): Promise<void> {
  app.get('/', { schema: { hide: true } }, async (_req, reply) =>
    reply.type('text/html; charset=utf-8').send(dashboardHtml),
  );
  app.get('/dashboard.js', { schema: { hide: true } }, async (_req, reply) =>
    reply.type('text/javascript; charset=utf-8').send(dashboardScript),
  );
}
