import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import { registryRoutes } from '../registry/index.js';

/**
 * For tests: a bare fastify app with only the registry plugin, listening on loopback (port 0),
 * so real clients (skopeo) can talk to it. `onRequest` sees every request (to count pulls).
 */
export async function startRegistry(
  dataDir: string,
  onRequest?: (request: FastifyRequest) => void,
): Promise<{ app: FastifyInstance; url: string }> {
  const app = Fastify({ logger: false, forceCloseConnections: true });
  if (onRequest !== undefined) app.addHook('onRequest', async (request) => onRequest(request));
  await registryRoutes(app, { dataDir });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return { app, url: `http://127.0.0.1:${port}` };
}
