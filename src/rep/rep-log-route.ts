import { statSync } from 'node:fs';
import { join } from 'node:path';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { Name } from '../core/index.js';
import type { Executor } from '../executor/index.js';
import { appNamePattern, copyLog, findApp, followLog } from '../runtime/index.js';
import { containerPod } from './container-pods.js';
import { LogLineWriter } from './log-lines.js';

/** How often a follower looks whether its container still runs (the executor's own poll is ~1 s). */
const endCheckMs = 250;

/** The bytes of a pod's log on disk now (`log.1` and `log`) and when it was last written. */
function logExtent(dir: string): { bytes: number; mtime: Date } {
  let bytes = 0;
  let mtime = new Date(0);
  for (const name of ['log.1', 'log']) {
    try {
      const st = statSync(join(dir, name));
      bytes += st.size;
      if (st.mtime > mtime) mtime = st.mtime;
    } catch {
      // catch-all: not written yet, or rotated away meanwhile: it adds nothing.
    }
  }
  return { bytes, mtime };
}

/**
 * Resolves once the container no longer runs on this cell, or when `signal` aborts (the reader
 * went away). A poll, not runtime.waitExit: that blocks a thread of libuv's pool on the pod's
 * lock until the pod exits, which a reader that disconnects would leave behind.
 */
function untilNotRunning(executor: Executor, guid: string, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearInterval(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setInterval(() => {
      if (executor.get(guid)?.state !== 'RUNNING') done();
    }, endCheckMs);
    signal.addEventListener('abort', done);
    if (signal.aborted) done();
  });
}

interface LogQuery {
  readonly follow?: boolean;
  readonly tail?: number;
  readonly since_ms?: number;
  /** One app of a pod of several; absent: the pod's own (first) app. */
  readonly app?: string;
}

/**
 * `GET /v1/containers/:guid/logs` on the rep: a container's log as NDJSON lines `{ts, line}`
 * (log-lines.ts), the backlog (its last `tail` lines) and then, with `follow`, each line as it is
 * written, until the container stops or the reader goes away. The server merges these streams
 * (`berth logs APP`); a missing container is 404 before the stream starts.
 */
export function registerRepLogRoute(app: FastifyInstance, executor: Executor): void {
  app.get<{ Params: { guid: string }; Querystring: LogQuery }>(
    '/v1/containers/:guid/logs',
    {
      schema: {
        params: Type.Object({ guid: Name() }),
        querystring: Type.Object(
          {
            follow: Type.Optional(Type.Boolean()),
            tail: Type.Optional(Type.Integer({ minimum: 0, maximum: 100_000 })),
            since_ms: Type.Optional(Type.Integer({ minimum: 0 })),
            app: Type.Optional(Type.String({ pattern: appNamePattern.source, maxLength: 64 })),
          },
          { additionalProperties: false },
        ),
      },
    },
    async (request, reply) => {
      const { guid } = request.params;
      const found = containerPod(executor, guid);
      // Each app of a pod of several keeps its log in its own bundle dir (the first: the pod's).
      const dir =
        request.query.app !== undefined && found.pod.manifest
          ? join(found.dir, findApp(found.pod.manifest, request.query.app).bundle)
          : found.dir;
      const extent = logExtent(dir);
      reply.hijack();
      const res = reply.raw;
      res.writeHead(200, {
        'content-type': 'application/x-ndjson; charset=utf-8',
        'cache-control': 'no-cache',
        'x-accel-buffering': 'no',
      });
      const gone = new AbortController();
      res.on('close', () => gone.abort());
      const follow = request.query.follow === true && found.container.state === 'RUNNING';
      const writer = new LogLineWriter({
        snapshot: !follow,
        backlogBytes: extent.bytes,
        backlogTime: extent.mtime,
        tail: request.query.tail,
        sinceMs: request.query.since_ms,
        emit: (text) => (gone.signal.aborted ? true : res.write(text)),
        drained: () =>
          new Promise<void>((resolve) => {
            const done = () => {
              res.off('drain', done);
              gone.signal.removeEventListener('abort', done);
              resolve();
            };
            res.on('drain', done);
            gone.signal.addEventListener('abort', done);
          }),
      });
      try {
        await writer.begin();
        if (follow) await followLog(dir, writer, untilNotRunning(executor, guid, gone.signal));
        else await copyLog(dir, writer);
        await new Promise<void>((resolve, reject) =>
          writer.end((err?: Error | null) => (err ? reject(err) : resolve())),
        );
      } finally {
        gone.abort();
        res.end();
      }
    },
  );
}
