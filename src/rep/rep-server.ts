import { createHash, timingSafeEqual } from 'node:crypto';
import Fastify, { type FastifyInstance } from 'fastify';
import { httpStatusByCode, isBerthError } from '../core/index.js';
import type { Rep } from './rep.js';
import type { RepStopRequest, RepWork } from './rep-api.js';

/**
 * The rep's HTTP API (`rep-api.ts`): what the auctioneer asks of a cell. Built without listening
 * so tests can `inject`; `startCell` listens.
 *
 * Every route but `/healthz` demands `Authorization: Bearer <token>`, the token the cell registered
 * with its presence (issue 17): anyone who can reach the port, a container on the bridge included,
 * could otherwise evacuate the cell or start work on it.
 */
export function buildRepApp(rep: Rep, auth: { readonly token: string }): FastifyInstance {
  if (auth.token.length < 32) throw new Error('The rep needs a token of at least 32 characters');
  const app = Fastify({ logger: false, bodyLimit: 8 * 1024 * 1024 });
  const expected = digest(auth.token);
  app.addHook('onRequest', async (request, reply) => {
    if (request.url === '/healthz') return;
    const presented = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '')?.[1];
    // Compared as digests of equal length, in constant time: the time taken says nothing of the token.
    if (presented !== undefined && timingSafeEqual(digest(presented), expected)) return;
    return reply.status(401).send({
      code: 'unauthenticated',
      message:
        presented === undefined
          ? "Missing bearer token: the rep answers only the server that holds this cell's token"
          : 'Invalid rep token',
      details: {},
    });
  });
  app.setErrorHandler((err, _req, reply) => {
    if (isBerthError(err)) return reply.status(httpStatusByCode[err.code]).send(err.toJSON());
    const statusCode = (err as { statusCode?: unknown }).statusCode;
    const status = typeof statusCode === 'number' ? statusCode : 500;
    const message = err instanceof Error ? err.message : String(err);
    return reply
      .status(status)
      .send({ code: status === 400 ? 'invalid_argument' : 'internal', message, details: {} });
  });
  app.get('/healthz', async () => ({ ok: true, cell_id: rep.cellId }));
  app.get('/v1/state', async () => rep.state());
  app.post<{ Body: RepWork }>(
    '/v1/work',
    {
      schema: {
        body: {
          type: 'object',
          required: ['lrps', 'tasks'],
          properties: { lrps: { type: 'array' }, tasks: { type: 'array' } },
        },
      },
    },
    async (req) => rep.perform(req.body),
  );
  app.post<{ Body: RepStopRequest }>(
    '/v1/stop',
    {
      schema: {
        body: {
          type: 'object',
          required: ['process_guid', 'index', 'instance_guid'],
          properties: {
            process_guid: { type: 'string' },
            index: { type: 'integer' },
            instance_guid: { type: 'string' },
          },
        },
      },
    },
    async (req, reply) => {
      await rep.stopInstance(req.body);
      return reply.status(204).send();
    },
  );
  app.post('/v1/evacuate', async (_req, reply) => {
    void rep.evacuate();
    return reply.status(202).send({ evacuating: true });
  });
  return app;
}

function digest(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}
