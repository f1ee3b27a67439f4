import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { HttpJsonClient, type ServerUrls } from '../core/index.js';
import { taskOutputPaths } from './http/task-output-routes.js';
import type { TaskOutputsInfo } from './task-output-types.js';

export interface TaskOutputClientOptions {
  readonly token?: string | undefined;
  /** For the whole upload (default 10 min: 256 MiB over a slow link). */
  readonly timeoutMs?: number;
}

/** The cell's side of task outputs: uploads a task's archive to the server that keeps it. */
export class TaskOutputClient {
  readonly #http: HttpJsonClient;

  constructor(baseUrl: ServerUrls, options: TaskOutputClientOptions = {}) {
    this.#http = new HttpJsonClient(baseUrl, {
      peer: 'the berth server',
      token: options.token,
      timeoutMs: options.timeoutMs ?? 600_000,
    });
  }

  /** PUTs `archive` (tar+gzip, digest `sha256`) as the outputs of a task RUNNING on `cellId`. */
  async upload(taskGuid: string, cellId: string, archive: string, sha256: string): Promise<TaskOutputsInfo> {
    const { size } = await stat(archive);
    const body = Readable.toWeb(createReadStream(archive)) as ReadableStream<Uint8Array>;
    return this.#http.sendBody<TaskOutputsInfo>(
      'PUT',
      taskOutputPaths.upload.replace(':task_guid', encodeURIComponent(taskGuid)),
      body,
      { query: { cell_id: cellId, sha256 }, contentType: 'application/gzip', contentLength: size },
    );
  }
}
