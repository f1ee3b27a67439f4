import { createHash, randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import {
  defaultWorkMemoryMb,
  bbsPublicOperations as ops,
  type Task,
  type TaskDefinition,
  type TaskState,
  type TaskWithDeliveries,
  taskOutputPaths,
} from '../bbs/index.js';
import {
  BerthError,
  type HttpJsonClient,
  InvalidArgumentError,
  isNotFound,
  parseDuration,
  sleep,
} from '../core/index.js';
import {
  booleanOption,
  type CommandContext,
  type CommandHandler,
  defaultCliDomain,
  formatOption,
  intOption,
  type OptionValues,
  stringListOption,
  stringOption,
} from './command.js';
import { listAll, serverClient } from './server-client.js';
import { renderTable } from './table-output.js';

const taskStates: readonly TaskState[] = ['PENDING', 'RUNNING', 'COMPLETED', 'RESOLVING'];

function guidArg(ctx: CommandContext): string {
  const guid = ctx.positionals[0];
  if (!guid) throw new InvalidArgumentError('GUID is required');
  return guid;
}

function nonNegative(values: OptionValues, name: string): number | undefined {
  const value = intOption(values, name);
  if (value !== undefined && value < 0) {
    throw new InvalidArgumentError(`--${name} must not be negative, got ${value}`, { flag: name });
  }
  return value;
}

function envOption(values: OptionValues): Record<string, string> {
  const env: Record<string, string> = {};
  for (const pair of stringListOption(values, 'env')) {
    const eq = pair.indexOf('=');
    if (eq <= 0)
      throw new InvalidArgumentError(`Invalid --env "${pair}": expected KEY=VALUE`, { flag: 'env' });
    env[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return env;
}

/** `--output NAME=PATH` (repeatable) and `--outputs-max-bytes N`: what the task leaves behind. */
function outputsOptions(values: OptionValues): Pick<TaskDefinition, 'outputs' | 'outputs_max_bytes'> {
  const outputs = stringListOption(values, 'output').map((pair) => {
    const eq = pair.indexOf('=');
    if (eq <= 0)
      throw new InvalidArgumentError(`Invalid --output "${pair}": expected NAME=PATH`, { flag: 'output' });
    return { name: pair.slice(0, eq), path: pair.slice(eq + 1) };
  });
  const maxBytes = intOption(values, 'outputs-max-bytes');
  return {
    ...(outputs.length > 0 ? { outputs } : {}),
    ...(maxBytes !== undefined ? { outputs_max_bytes: maxBytes } : {}),
  };
}

/**
 * Waits for a task to complete by polling its record. A task with a callback may be deleted by
 * the callback worker right after completing; then the result went to the callback, not to us.
 */
async function waitForCompletion(
  client: HttpJsonClient,
  guid: string,
  options: { readonly timeoutMs: number | undefined; readonly pollMs: number },
): Promise<TaskWithDeliveries> {
  const deadline =
    options.timeoutMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + options.timeoutMs;
  for (;;) {
    let task: TaskWithDeliveries;
    try {
      task = await client.call(ops.getTask, { params: { task_guid: guid } });
    } catch (err) {
      if (isNotFound(err)) {
        throw new BerthError(
          'not_found',
          `Task "${guid}" was deleted before its result could be read (a completion callback or another consumer took it)`,
          { task_guid: guid },
        );
      }
      throw err;
    }
    if (task.state === 'COMPLETED' || task.state === 'RESOLVING') return task;
    if (Date.now() >= deadline) {
      throw new BerthError('unavailable', `Task "${guid}" is still ${task.state} after the --wait timeout`, {
        task_guid: guid,
        state: task.state,
      });
    }
    await sleep(options.pollMs);
  }
}

/** Consumer's clean-up: COMPLETED → RESOLVING → deleted (DESIGN.md: resolve, then delete). */
async function resolveAndDelete(client: HttpJsonClient, task: Task): Promise<void> {
  const params = { task_guid: task.task_guid };
  if (task.state === 'COMPLETED') await client.call(ops.resolveTask, { params });
  await client.call(ops.deleteTask, { params });
}

function writeFailure(ctx: CommandContext, task: Task): void {
  ctx.stderr.write(`berth: task ${task.task_guid} failed: ${task.failure_reason || 'no reason recorded'}\n`);
}

const run: CommandHandler = {
  name: 'task run',
  async run(ctx) {
    const v = ctx.values;
    const callback = stringOption(v, 'callback') ?? '';
    if (callback !== '' && !/^https?:\/\/[^/]+/.test(callback)) {
      throw new InvalidArgumentError(
        `Invalid --callback "${callback}": expected an http:// or https:// URL`,
        {
          flag: 'callback',
        },
      );
    }
    const definition: TaskDefinition = {
      task_guid: stringOption(v, 'guid') ?? randomUUID(),
      domain: stringOption(v, 'domain') ?? defaultCliDomain,
      image: ctx.positionals[0] ?? '',
      // The whole argv, replacing the image's Entrypoint and Cmd; absent, the image's own run.
      ...(ctx.rest.length > 0 ? { command: ctx.rest } : {}),
      env: envOption(v),
      memory_mb: nonNegative(v, 'memory') ?? defaultWorkMemoryMb,
      disk_mb: nonNegative(v, 'disk') ?? 0,
      result_file: stringOption(v, 'result-file') ?? '',
      completion_callback_url: callback,
      placement_tags: stringListOption(v, 'tag'),
      ...outputsOptions(v),
    };
    const client = serverClient(ctx);
    const created = await client.call(ops.desireTask, { body: definition });
    const waitValue = v.wait;
    if (waitValue === undefined) {
      ctx.stdout.write(`${created.task_guid}\n`);
      return 0;
    }
    const poll = stringOption(v, 'poll-interval');
    const task = await waitForCompletion(client, created.task_guid, {
      timeoutMs: typeof waitValue === 'string' ? parseDuration(waitValue, '--wait') : undefined,
      pollMs: poll !== undefined ? parseDuration(poll, '--poll-interval') : 250,
    });
    if (task.failed) writeFailure(ctx, task);
    else ctx.stdout.write(task.result);
    // Its outputs, before the task (and they with it) is deleted: the files written go to stderr,
    // stdout is the result's. A failed task may have none (its outputs were what failed).
    if ((definition.outputs ?? []).length > 0) {
      await downloadOutputs(ctx.stderr, client, task.task_guid, outputDir(v, task.task_guid)).catch(
        (err: unknown) => {
          if (!task.failed || !isNotFound(err)) throw err;
        },
      );
    }
    // We are the consumer that read the result; a task with a callback is the callback's to finish.
    if (!booleanOption(v, 'keep') && callback === '') {
      await resolveAndDelete(client, task).catch((err: unknown) => {
        ctx.stderr.write(
          `berth: could not remove task ${task.task_guid}: ${err instanceof Error ? err.message : String(err)}\n`,
        );
      });
    }
    return task.failed ? 1 : 0;
  },
};

const list: CommandHandler = {
  name: 'task list',
  async run(ctx) {
    const format = formatOption(ctx, ['table', 'json']);
    const state = stringOption(ctx.values, 'state');
    if (state !== undefined && !taskStates.includes(state as TaskState)) {
      throw new InvalidArgumentError(`Invalid --state "${state}": expected one of ${taskStates.join(', ')}`, {
        flag: 'state',
      });
    }
    const tasks = await listAll(serverClient(ctx), ops.listTasks, 'tasks', {
      state,
      domain: stringOption(ctx.values, 'domain'),
    });
    if (format === 'json') {
      ctx.stdout.write(`${JSON.stringify(tasks, null, 2)}\n`);
      return 0;
    }
    ctx.stdout.write(
      renderTable(
        ['TASK_GUID', 'STATE', 'RESULT', 'CELL', 'IMAGE', 'CREATED'],
        tasks.map((t) => [
          t.task_guid,
          t.state,
          t.state === 'COMPLETED' || t.state === 'RESOLVING'
            ? t.failed
              ? `failed: ${t.failure_reason}`
              : 'succeeded'
            : '',
          t.cell_id,
          t.image,
          t.created_at,
        ]),
        !booleanOption(ctx.values, 'no-legend'),
      ),
    );
    return 0;
  },
};

const get: CommandHandler = {
  name: 'task get',
  async run(ctx) {
    const task = await serverClient(ctx).call(ops.getTask, { params: { task_guid: guidArg(ctx) } });
    ctx.stdout.write(`${JSON.stringify(task, null, 2)}\n`);
    return 0;
  },
};

const cancel: CommandHandler = {
  name: 'task cancel',
  async run(ctx) {
    const task = await serverClient(ctx).call(ops.cancelTask, { params: { task_guid: guidArg(ctx) } });
    ctx.stdout.write(`${task.task_guid}\n`);
    return 0;
  },
};

const rm: CommandHandler = {
  name: 'task rm',
  async run(ctx) {
    const client = serverClient(ctx);
    const guid = guidArg(ctx);
    let task: Task = await client.call(ops.getTask, { params: { task_guid: guid } });
    if (task.state === 'PENDING' || task.state === 'RUNNING') {
      if (!booleanOption(ctx.values, 'force')) {
        throw new BerthError(
          'illegal_transition',
          `Cannot remove task "${guid}": it is ${task.state}; cancel it first (berth task cancel) or use --force`,
          { task_guid: guid, state: task.state },
        );
      }
      task = await client.call(ops.cancelTask, { params: { task_guid: guid } });
    }
    await resolveAndDelete(client, task);
    ctx.stdout.write(`${guid}\n`);
    return 0;
  },
};

/**
 * Downloads a task's outputs archive to a private temp file, checks it against the digest the
 * server stored, then unpacks it safely (task-output-extract.ts) into `dest`; prints each file.
 */
async function downloadOutputs(
  listing: CommandContext['stdout'],
  client: HttpJsonClient,
  guid: string,
  dest: string,
): Promise<void> {
  const response = await client.openDownload(
    taskOutputPaths.download.replace(':task_guid', encodeURIComponent(guid)),
  );
  const expected = response.headers.get('x-berth-sha256') ?? '';
  const spool = mkdtempSync(join(tmpdir(), 'berth-outputs-'));
  try {
    const file = join(spool, 'outputs.tar.gz');
    const hash = createHash('sha256');
    await pipeline(
      Readable.fromWeb(response.body as WebReadableStream<Uint8Array>),
      async function* (chunks: AsyncIterable<Buffer>) {
        for await (const chunk of chunks) {
          hash.update(chunk);
          yield chunk;
        }
      },
      createWriteStream(file, { mode: 0o600 }),
    );
    const actual = hash.digest('hex');
    if (actual !== expected) {
      throw new BerthError(
        'unavailable',
        `The outputs of task "${guid}" arrived damaged or cut short (SHA-256 ${actual}, the server has ${expected}); try again`,
        { task_guid: guid },
      );
    }
    // Loaded only here: tar-stream stays out of the CLI bundle (scripts/bundle-pod-cli.mjs).
    const { extractOutputs } = await import('./task-output-extract.js');
    const extracted = await extractOutputs(createReadStream(file), dest);
    for (const path of extracted.files) listing.write(`${join(dest, path)}\n`);
  } finally {
    rmSync(spool, { recursive: true, force: true });
  }
}

function outputDir(values: OptionValues, guid: string): string {
  return resolve(stringOption(values, 'output-dir') ?? `${guid}-outputs`);
}

const outputs: CommandHandler = {
  name: 'task outputs',
  async run(ctx) {
    const guid = guidArg(ctx);
    await downloadOutputs(ctx.stdout, serverClient(ctx), guid, outputDir(ctx.values, guid));
    return 0;
  },
};

export const commands: readonly CommandHandler[] = [run, list, get, cancel, rm, outputs];
