import type {} from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { InvalidArgumentError, redactEnv } from '../../core/index.js';
import type { BbsRoutesOptions } from './bbs-routes-options.js';

const batch = 1000;
const heartbeatMs = 15_000;

/**
 * `GET /v1/events`: Server-Sent Events of every change, read from the store's event log (so a
 * client resumes with `Last-Event-ID`, also on another server of the same PostgreSQL). The stream
 * polls the log for other servers' writes and wakes at once for this server's own.
 */
export function registerEventRoutes(
  app: ReturnType<FastifyInstance['withTypeProvider']> & FastifyInstance,
  options: BbsRoutesOptions,
): void {
  const typed = app.withTypeProvider<TypeBoxTypeProvider>();
  const pollMs = options.eventPollMs ?? 250;
  const reauthMs = options.reauthMs ?? 5_000;
  const open = new Set<() => void>();
  app.addHook('preClose', async () => {
    for (const end of open) end();
  });

  typed.get(
    '/v1/events',
    {
      schema: {
        tags: ['events'],
        summary: 'Server-Sent Events of DesiredLRP, ActualLRP and Task changes; resumable with Last-Event-ID',
        querystring: Type.Object(
          {
            after: Type.Optional(
              Type.String({
                description: 'Resume after this event id; `now`: only events written from now on',
              }),
            ),
          },
          { additionalProperties: false },
        ),
        headers: Type.Object({ 'last-event-id': Type.Optional(Type.String()) }),
      },
    },
    async (request, reply) => {
      let cursor = request.headers['last-event-id'] ?? request.query.after;
      // A watcher that lists first and then follows (the console, routers) starts from the head,
      // not from the oldest event kept: a day of events replayed to be thrown away.
      if (cursor === 'now') {
        if (!options.headEventId)
          throw new InvalidArgumentError('after=now is not served by this store', { field: 'after' });
        cursor = await options.headEventId();
      }
      // Read once before answering so a bad cursor is a plain 400, not a broken stream.
      let pending = await options.store.readEvents({ ...(cursor ? { after: cursor } : {}), limit: batch });
      reply.hijack();
      const res = reply.raw;
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
      });
      res.write(': berth bbs events\n\n');
      let closed = false;
      let wake: (() => void) | undefined;
      const end = () => {
        closed = true;
        wake?.();
        res.end();
      };
      open.add(end);
      request.raw.on('close', () => {
        closed = true;
        wake?.();
      });
      const unsubscribe = options.onEvents?.(() => wake?.());
      let lastWrite = Date.now();
      let lastAuth = Date.now();
      const redact = options.redactsEnv?.(request) === true;
      try {
        while (!closed) {
          if (options.stillAuthorized && Date.now() - lastAuth >= reauthMs) {
            lastAuth = Date.now();
            // The stream was authorised when it opened; a token revoked or expired since then
            // ends it, and the client's reconnect is refused with 401 (the console's sign-in).
            if (!(await options.stillAuthorized(request))) break;
          }
          for (const event of pending) {
            const data = JSON.stringify(redact ? redactEnv(event) : event);
            res.write(`id: ${event.id}\nevent: ${event.type}\ndata: ${data}\n\n`);
            cursor = event.id;
            lastWrite = Date.now();
          }
          if (pending.length < batch) {
            if (Date.now() - lastWrite > heartbeatMs) {
              res.write(': keep-alive\n\n');
              lastWrite = Date.now();
            }
            await new Promise<void>((resolve) => {
              const timer = setTimeout(resolve, pollMs);
              wake = () => {
                clearTimeout(timer);
                resolve();
              };
            });
            wake = undefined;
          }
          if (closed) break;
          pending = await options.store.readEvents({ ...(cursor ? { after: cursor } : {}), limit: batch });
        }
      } catch (err) {
        request.log.warn({ err }, 'event stream ended by an error');
      } finally {
        unsubscribe?.();
        open.delete(end);
        if (!res.writableEnded) res.end();
      }
    },
  );
}
