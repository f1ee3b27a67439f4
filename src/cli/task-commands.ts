import { randomUUID } from 'node:crypto';
import {
  defaultWorkMemoryMb,
  type Task,
  type TaskDefinition,
  type TaskDelivery,
  type TaskState,
} from '../bbs/index.js';
import { BerthError, InvalidArgumentError, isBerthError, parseDuration } from '../core/index.js';
import {
  booleanOption,
  type CommandContext,
  type CommandSpec,
  formatOption,
  intOption,
  type OptionValues,
  stringListOption,
  stringOption,
} from './command.js';
import { type ServerClient, serverClient, serverFlags, serverFlagsUsage } from './server-client.js';
import { renderTable } from './table-output.js';

/** A task as `GET /v1/tasks/{guid}` returns it: the record and its callback delivery log. */
export type TaskWithDeliveries = Task & { readonly deliveries: readonly TaskDelivery[] };

/** Domain of tasks run from the CLI unless --domain says otherwise. */
export const defaultCliDomain = 'berth';

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

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const taskPath = (guid: string) => `/v1/tasks/${encodeURIComponent(guid)}`;

/**
 * Waits for a task to complete by polling its record. A task with a callback may be deleted by
 * the callback worker right after completing; then the result went to the callback, not to us.
 */
async function waitForCompletion(
  client: ServerClient,
  guid: string,
  options: { readonly timeoutMs: number | undefined; readonly pollMs: number },
): Promise<TaskWithDeliveries> {
  const deadline =
    options.timeoutMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + options.timeoutMs;
  for (;;) {
    let task: TaskWithDeliveries;
    try {
      task = await client.request<TaskWithDeliveries>('GET', taskPath(guid));
    } catch (err) {
      if (isBerthError(err) && err.code === 'not_found') {
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
async function resolveAndDelete(client: ServerClient, task: Task): Promise<void> {
  if (task.state === 'COMPLETED') await client.request('POST', `${taskPath(task.task_guid)}/resolve`);
  await client.request('DELETE', taskPath(task.task_guid));
}

function writeFailure(ctx: CommandContext, task: Task): void {
  ctx.stderr.write(`berth: task ${task.task_guid} failed: ${task.failure_reason || 'no reason recorded'}\n`);
}

const run: CommandSpec = {
  name: 'task run',
  summary:
    'Run a one-off task on the cluster. Prints the task_guid; with --wait, waits for it, prints its result (the --result-file contents) and exits 0 if it succeeded, 1 with the failure reason on stderr if not. --wait also resolves and deletes the task unless --keep.',
  usage: `berth task run [--wait[=TIMEOUT]] [--keep] [--result-file PATH] [--callback URL] [--memory MB] [--disk MB] [--env K=V]... [--domain D] [--guid GUID] [--tag TAG]... ${serverFlagsUsage} IMAGE [-- CMD ARGS...]`,
  options: {
    ...serverFlags,
    wait: { type: 'string' },
    keep: { type: 'boolean' },
    'result-file': { type: 'string' },
    callback: { type: 'string' },
    memory: { type: 'string' },
    disk: { type: 'string' },
    env: { type: 'string', short: 'e', multiple: true },
    domain: { type: 'string' },
    guid: { type: 'string' },
    tag: { type: 'string', multiple: true },
    'poll-interval': { type: 'string' },
  },
  optionalValue: ['wait'],
  positionals: { min: 1, max: 1, names: 'IMAGE' },
  acceptsRest: true,
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
    };
    const client = serverClient(ctx);
    const created = await client.request<Task>('POST', '/v1/tasks', definition);
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

const list: CommandSpec = {
  name: 'task list',
  summary: 'List tasks (all states, or --state).',
  usage: `berth task list [--format table|json] [--state PENDING|RUNNING|COMPLETED|RESOLVING] [--domain D] [--no-legend] ${serverFlagsUsage}`,
  options: {
    ...serverFlags,
    format: { type: 'string' },
    state: { type: 'string' },
    domain: { type: 'string' },
    'no-legend': { type: 'boolean' },
  },
  async run(ctx) {
    const format = formatOption(ctx, ['table', 'json']);
    const state = stringOption(ctx.values, 'state');
    if (state !== undefined && !taskStates.includes(state as TaskState)) {
      throw new InvalidArgumentError(`Invalid --state "${state}": expected one of ${taskStates.join(', ')}`, {
        flag: 'state',
      });
    }
    const query = new URLSearchParams();
    if (state !== undefined) query.set('state', state);
    const domain = stringOption(ctx.values, 'domain');
    if (domain !== undefined) query.set('domain', domain);
    const qs = query.toString();
    const tasks = await serverClient(ctx).listAll<Task>(`/v1/tasks${qs ? `?${qs}` : ''}`, 'tasks');
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

const get: CommandSpec = {
  name: 'task get',
  summary: 'Show one task as JSON, with its completion-callback delivery log (`deliveries`).',
  usage: `berth task get ${serverFlagsUsage} GUID`,
  options: { ...serverFlags },
  positionals: { min: 1, max: 1, names: 'GUID' },
  async run(ctx) {
    const task = await serverClient(ctx).request<TaskWithDeliveries>('GET', taskPath(guidArg(ctx)));
    ctx.stdout.write(`${JSON.stringify(task, null, 2)}\n`);
    return 0;
  },
};

const cancel: CommandSpec = {
  name: 'task cancel',
  summary:
    'Cancel a task: it becomes COMPLETED, failed, "task was cancelled"; a running container is destroyed by its cell.',
  usage: `berth task cancel ${serverFlagsUsage} GUID`,
  options: { ...serverFlags },
  positionals: { min: 1, max: 1, names: 'GUID' },
  async run(ctx) {
    const task = await serverClient(ctx).request<Task>('POST', `${taskPath(guidArg(ctx))}/cancel`);
    ctx.stdout.write(`${task.task_guid}\n`);
    return 0;
  },
};

const rm: CommandSpec = {
  name: 'task rm',
  summary:
    'Remove a finished task (resolve, then delete). A PENDING or RUNNING task is refused unless --force, which cancels it first.',
  usage: `berth task rm [--force] ${serverFlagsUsage} GUID`,
  options: { ...serverFlags, force: { type: 'boolean' } },
  positionals: { min: 1, max: 1, names: 'GUID' },
  async run(ctx) {
    const client = serverClient(ctx);
    const guid = guidArg(ctx);
    let task = await client.request<Task>('GET', taskPath(guid));
    if (task.state === 'PENDING' || task.state === 'RUNNING') {
      if (!booleanOption(ctx.values, 'force')) {
        throw new BerthError(
          'illegal_transition',
          `Cannot remove task "${guid}": it is ${task.state}; cancel it first (berth task cancel) or use --force`,
          { task_guid: guid, state: task.state },
        );
      }
      task = await client.request<Task>('POST', `${taskPath(guid)}/cancel`);
    }
    await resolveAndDelete(client, task);
    ctx.stdout.write(`${guid}\n`);
    return 0;
  },
};

export const commands: readonly CommandSpec[] = [run, list, get, cancel, rm];

// ---- `berth server` flags of the callback worker (used by src/cli/server-command.ts)

export const taskCallbackServerFlags = {
  'callback-attempts': { type: 'string' },
  'callback-backoff-base': { type: 'string' },
  'callback-backoff-max': { type: 'string' },
  'callback-timeout': { type: 'string' },
} as const;

export const taskCallbackServerUsage =
  '[--callback-attempts 5] [--callback-backoff-base 1s] [--callback-backoff-max 30s] [--callback-timeout 10s]';

/** The server's callback settings from its flags; only what was given (the rest keeps defaults). */
export function taskCallbackConfigFromFlags(values: OptionValues): {
  maxAttempts?: number;
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  timeoutMs?: number;
} {
  const attempts = intOption(values, 'callback-attempts');
  if (attempts !== undefined && attempts < 1) {
    throw new InvalidArgumentError(`--callback-attempts must be at least 1, got ${attempts}`, {
      flag: 'callback-attempts',
    });
  }
  const duration = (name: string) => {
    const text = stringOption(values, name);
    return text === undefined ? undefined : parseDuration(text, `--${name}`);
  };
  const base = duration('callback-backoff-base');
  const max = duration('callback-backoff-max');
  const timeout = duration('callback-timeout');
  return {
    ...(attempts !== undefined ? { maxAttempts: attempts } : {}),
    ...(base !== undefined ? { backoffBaseMs: base } : {}),
    ...(max !== undefined ? { backoffMaxMs: max } : {}),
    ...(timeout !== undefined ? { timeoutMs: timeout } : {}),
  };
}
