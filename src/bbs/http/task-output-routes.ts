import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type {} from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { BerthError, Name } from '../../core/index.js';
import type { BbsStore } from '../bbs-store.js';
import type { TaskOutputStore } from '../sql/task-output-store.js';
import { maxArchiveBytes, taskOutputLimits } from '../task-output-types.js';

/** The two routes of task outputs: the cell's upload and everyone's download. */
export const taskOutputPaths = {
  /** PUT by the cell that ran the task, while the task is RUNNING there. */
  upload: '/v1/internal/task_outputs/:task_guid',
  download: '/v1/tasks/:task_guid/outputs',
} as const;

export interface TaskOutputRoutesOptions {
  readonly store: BbsStore;
  readonly outputs: TaskOutputStore;
}

const Params = Type.Object({ task_guid: Name() });
const UploadQuery = Type.Object(
  {
    cell_id: Name({ description: 'The cell the task runs on (the task must be RUNNING there)' }),
    sha256: Type.String({ pattern: '^[0-9a-f]{64}$', description: 'Hex SHA-256 of the archive' }),
  },
  { additionalProperties: false },
);

/**
 * Task outputs over HTTP. The upload is internal (operator role, like the rep's other calls: the
 * cell says which cell it is, and the store accepts it only for a task RUNNING on that cell); its
 * body, a tar+gzip archive, is spooled to a private temp file while it is counted and hashed, so a
 * body past the task's limit is cut off at the limit and a damaged one never reaches the database.
 * The download streams the stored archive one row at a time, its digest in `x-berth-sha256`.
 */
export async function registerTaskOutputRoutes(
  root: FastifyInstance,
  options: TaskOutputRoutesOptions,
): Promise<void> {
  await root.register(async (scope) => {
    // The archive is read from the request stream by the handler: no body parsing here.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_request, _payload, done) => done(null, undefined));
    const app = scope.withTypeProvider<TypeBoxTypeProvider>();

    app.put(
      taskOutputPaths.upload,
      {
        schema: {
          tags: ['internal'],
          summary: "A cell stores its task's outputs (tar+gzip body) before completing the task",
          params: Params,
          querystring: UploadQuery,
        },
      },
      async (request, reply) => {
        const guid = request.params.task_guid;
        const { cell_id, sha256 } = request.query;
        const task = await options.store.getTask({ task_guid: guid });
        if (task.state !== 'RUNNING' || task.cell_id !== cell_id) {
          throw new BerthError(
            'conflict',
            `Cannot store the outputs of task "${guid}" from cell "${cell_id}": the task is ${task.state}, not RUNNING on that cell`,
            { kind: 'Task', id: guid, current: task },
          );
        }
        const limit = maxArchiveBytes(task.outputs_max_bytes ?? taskOutputLimits.defaultBytes);
        const dir = await mkdtemp(join(tmpdir(), 'berth-task-outputs-'));
        try {
          const file = join(dir, 'outputs.tar.gz');
          const spooled = await spool(request.raw, file, limit, guid);
          if (spooled.sha256 !== sha256) {
            throw new BerthError(
              'invalid_argument',
              `Cannot store the outputs of task "${guid}": the body's SHA-256 is ${spooled.sha256}, the cell said ${sha256}`,
              { sha256: spooled.sha256 },
            );
          }
          const info = await options.outputs.store({
            task_guid: guid,
            cell_id,
            file,
            size: spooled.size,
            sha256,
          });
          return reply.code(201).send(info);
        } finally {
          await rm(dir, { recursive: true, force: true });
        }
      },
    );

    app.get(
      taskOutputPaths.download,
      {
        schema: {
          tags: ['tasks'],
          summary:
            "The task's outputs as a tar+gzip archive (one top-level entry per declared output); 404 when it has none",
          params: Params,
        },
      },
      async (request, reply) => {
        const info = await options.outputs.info(request.params.task_guid);
        return reply
          .header('content-type', 'application/gzip')
          .header('content-length', String(info.size))
          .header('x-berth-sha256', info.sha256)
          .header(
            'content-disposition',
            `attachment; filename="${info.task_guid.replace(/[^A-Za-z0-9_.-]/g, '_')}-outputs.tar.gz"`,
          )
          .send(Readable.from(options.outputs.read(info.task_guid)));
      },
    );
  });
}

/** Writes `body` to `file`, at most `limit` bytes of it; its size and SHA-256. */
async function spool(
  body: Readable,
  file: string,
  limit: number,
  guid: string,
): Promise<{ size: number; sha256: string }> {
  const hash = createHash('sha256');
  let size = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      size += chunk.length;
      if (size > limit) {
        callback(
          new BerthError(
            'resource_exhausted',
            `Cannot store the outputs of task "${guid}": the archive is over ${limit} bytes, the most its outputs_max_bytes allows`,
            { limit },
          ),
        );
        return;
      }
      hash.update(chunk);
      callback(null, chunk);
    },
  });
  await pipeline(body, counter, createWriteStream(file, { mode: 0o600 }));
  return { size, sha256: hash.digest('hex') };
}
