import { createHash, timingSafeEqual } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import Fastify, { type FastifyInstance } from 'fastify';
import {
  DiskMb,
  httpStatusByCode,
  InstanceIndex,
  installRequestGuards,
  isBerthError,
  limits,
  MemoryMb,
  Name,
  NameOrEmpty,
  PlacementTags,
} from '../core/index.js';
import type { Executor } from '../executor/index.js';
import type { Rep } from './rep.js';
import type { RepStopRequest, RepWork } from './rep-api.js';
import { attachRepExec } from './rep-exec.js';
import { registerRepLogRoute } from './rep-log-route.js';

// What the auctioneer sends (rep-api.ts), bounded as the BBS bounds it (src/core/limits.ts).
const work = {
  domain: NameOrEmpty(),
  memory_mb: MemoryMb(),
  disk_mb: DiskMb(),
  placement_tags: PlacementTags(),
};
const LrpWorkSchema = Type.Object({ process_guid: Name(), index: InstanceIndex(), ...work });
const TaskWorkSchema = Type.Object({ task_guid: Name(), ...work });

/**
 * The rep's HTTP API (`rep-api.ts`): what the auctioneer asks of a cell. Built without listening
 * so tests can `inject`; `startCell` listens.
 *
 * Every route but `/healthz` demands `Authorization: Bearer <token>`, the token the cell registered
 * with its presence (issue 17): anyone who can reach the port, a container on the bridge included,
 * could otherwise evacuate the cell or start work on it.
 */
export function buildRepApp(
  rep: Rep,
  auth: { readonly token: string },
  /** Serves container logs and exec (issue 22) when given the cell's executor. */
  streams?: { readonly executor: Executor },
): FastifyInstance {
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
  installRequestGuards(app);
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
        body: Type.Object({
          lrps: Type.Array(LrpWorkSchema, { maxItems: limits.maxBatchItems }),
          tasks: Type.Array(TaskWorkSchema, { maxItems: limits.maxBatchItems }),
        }),
      },
    },
    async (req) => rep.perform(req.body),
  );
  app.post<{ Body: RepStopRequest }>(
    '/v1/stop',
    {
      schema: {
        body: Type.Object({ process_guid: Name(), index: InstanceIndex(), instance_guid: Name() }),
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
  if (streams) {
    registerRepLogRoute(app, streams.executor);
    // An upgrade skips the onRequest hook above: the exec WebSocket checks the token itself.
    attachRepExec(app, streams.executor, (req) => {
      const presented = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '')?.[1];
      return presented !== undefined && timingSafeEqual(digest(presented), expected);
    });
  }
  return app;
}

function digest(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}
