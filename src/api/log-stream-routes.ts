import type { ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { BbsStore } from '../bbs/index.js';
import { InvalidArgumentError, isNotFound, Name } from '../core/index.js';
import { type LogLine, repLogLines } from '../rep/index.js';
import {
  type AppRef,
  cellsById,
  type InstanceTarget,
  instanceTargets,
  missingRef,
  refExists,
} from './instance-targets.js';

/** One line of `GET /v1/logs`: a container's line with its `[APP/INDEX]` source, or an error of one. */
export interface ServerLogLine {
  /** When the line was written (stage 1 read it from the app's pipe). */
  readonly ts: string;
  readonly source: string;
  /** `stdout` or `stderr`; absent for a container whose log an older berth wrote. */
  readonly stream?: LogLine['stream'];
  readonly line?: string;
  readonly error?: string;
}

/** How often a follower looks for new instances besides the BBS's own wake-ups (other servers' writes). */
const refreshMs = 1000;
/** How often a task's follower looks whether the task has finished, while no stream of it is open. */
const taskPollMs = 250;

interface LogsQuery {
  readonly app?: string;
  readonly task?: string;
  readonly index?: number;
  readonly follow?: boolean;
  readonly tail?: number;
  readonly since_ms?: number;
}

export interface LogStreamOptions {
  readonly store: BbsStore;
  /**
   * The log a finished container left in the history (finalization keeps its end), with the time
   * it finished: what a finished task shows once its cell has removed the container.
   */
  readonly finalizedLog?:
    | ((guid: string) => Promise<{ readonly text: string; readonly ts: string } | undefined>)
    | undefined;
  /** Wakes on this server's BBS commits (berth-server.ts: `store.onEvents`); returns unsubscribe. */
  readonly onEvents?: ((listener: () => void) => () => void) | undefined;
}

/** Writes a line, waiting while the client's buffer is full (a slow reader holds its reps back). */
async function writeLine(res: ServerResponse, line: ServerLogLine, gone: AbortSignal): Promise<void> {
  if (gone.aborted || res.write(`${JSON.stringify(line)}\n`)) return;
  await new Promise<void>((resolve) => {
    const done = () => {
      res.off('drain', done);
      gone.removeEventListener('abort', done);
      resolve();
    };
    res.on('drain', done);
    gone.addEventListener('abort', done);
  });
}

/**
 * Reads the containers of one app or task from their cells and merges them into one stream.
 * The containers there at the start send their backlog first: it is held until each has sent
 * it (its `live` mark, or its end), then written sorted by time, so `--tail` lines of every
 * instance interleave. After that each line is written as it comes. With `follow`, instances
 * that start later (a restart, a move, a scale-up) are found on every BBS wake-up and every
 * second, and joined with their whole log.
 */
class LogFanIn {
  readonly #attached = new Set<string>();
  /**
   * Containers whose stream came to its end (the container stopped): never attached again, as a
   * restarted instance is a new container (a new instance_guid) and a task runs once. One that
   * broke (its cell unreachable) may be.
   */
  readonly #ended = new Set<string>();
  readonly #held: ServerLogLine[] = [];
  #pendingInitial = 0;
  #live = false;
  readonly #pumps = new Set<Promise<void>>();

  constructor(
    readonly store: BbsStore,
    readonly ref: AppRef,
    readonly query: LogsQuery,
    readonly res: ServerResponse,
    readonly gone: AbortSignal,
    readonly finalizedLog: LogStreamOptions['finalizedLog'],
  ) {}

  async attachAll(initial: boolean): Promise<void> {
    const targets = await instanceTargets(this.store, this.ref, {
      index: this.query.index,
      finished: !this.query.follow,
    });
    const fresh = targets.filter((t) => !this.#attached.has(t.guid) && !this.#ended.has(t.guid));
    if (fresh.length === 0) {
      if (initial) await this.#release();
      return;
    }
    const cells = await cellsById(this.store);
    if (initial) this.#pendingInitial = fresh.length;
    for (const target of fresh) {
      this.#attached.add(target.guid);
      const pump = this.#pump(target, cells.get(target.cell_id), initial).finally(() =>
        this.#pumps.delete(pump),
      );
      this.#pumps.add(pump);
    }
  }

  /** Resolves once every attached container's stream has ended. */
  async drained(): Promise<void> {
    while (this.#pumps.size > 0) await Promise.all([...this.#pumps]);
  }

  get activeCount(): number {
    return this.#pumps.size;
  }

  /** Whether this container's stream came to its end. */
  ended(guid: string): boolean {
    return this.#ended.has(guid);
  }

  async #pump(target: InstanceTarget, cell: Parameters<typeof repLogLines>[0] | undefined, initial: boolean) {
    let released = !initial;
    const release = async () => {
      if (released) return;
      released = true;
      if (--this.#pendingInitial === 0) await this.#release();
    };
    try {
      if (!cell) throw new Error(`its cell ${target.cell_id} is not present`);
      const lines = repLogLines(
        cell,
        target.guid,
        {
          follow: this.query.follow ?? false,
          ...(target.app !== undefined ? { app: target.app } : {}),
          ...(initial ? { tail: this.query.tail, since_ms: this.query.since_ms } : {}),
        },
        this.gone,
      );
      for await (const line of lines) {
        if (line.event === 'live') await release();
        else if (line.line !== undefined)
          await this.#emit({
            ts: line.ts,
            source: target.source,
            ...(line.stream ? { stream: line.stream } : {}),
            line: line.line,
          });
      }
    } catch (err) {
      // A finished task whose cell removed its container: the log the history kept of it.
      if (isNotFound(err) && target.state === 'COMPLETED' && (await this.#finalized(target))) return;
      // One instance's cell failing must not end the others' streams: it is a line of its own.
      const message = err instanceof Error ? err.message : String(err);
      if (!this.gone.aborted)
        await this.#emit({ ts: new Date().toISOString(), source: target.source, error: message });
    } finally {
      this.#attached.delete(target.guid);
      await release();
    }
  }

  /** Sends the finalized log of a container, each line at its end's time; false when there is none. */
  async #finalized(target: InstanceTarget): Promise<boolean> {
    const log = await this.finalizedLog?.(target.guid).catch(() => undefined); // catch-all: none kept
    if (!log) return false;
    const lines = log.text.endsWith('\n') ? log.text.slice(0, -1).split('\n') : log.text.split('\n');
    const tail = this.query.tail;
    for (const line of tail === undefined ? lines : lines.slice(Math.max(0, lines.length - tail)))
      if (log.text !== '' && (this.query.since_ms === undefined || Date.parse(log.ts) >= this.query.since_ms))
        await this.#emit({ ts: log.ts, source: target.source, line });
    this.#ended.add(target.guid);
    return true;
  }

  async #emit(line: ServerLogLine): Promise<void> {
    if (!this.#live) this.#held.push(line);
    else await writeLine(this.res, line, this.gone);
  }

  async #release(): Promise<void> {
    if (this.#live) return;
    const held = this.#held.splice(0).sort((a, b) => (a.ts < b.ts ? -1 : a.ts > b.ts ? 1 : 0));
    this.#live = true;
    for (const line of held) await writeLine(this.res, line, this.gone);
  }
}

/**
 * Resolves once a followed task has nothing more to say: its container's stream came to its end
 * (the task is completing), or the task is past RUNNING (or gone) with no stream open.
 */
async function untilTaskEnds(store: BbsStore, guid: string, fan: LogFanIn, gone: AbortSignal): Promise<void> {
  while (!gone.aborted) {
    await fan.drained();
    if (fan.activeCount === 0 && fan.ended(guid)) return;
    const state = await store.getTask({ task_guid: guid }).then(
      (task) => task.state,
      (err: unknown) => {
        if (isNotFound(err)) return 'deleted';
        return 'RUNNING'; // catch-all: the BBS unreachable this time: the next look tells
      },
    );
    if (fan.activeCount === 0 && state !== 'PENDING' && state !== 'RUNNING') return;
    await sleep(taskPollMs);
  }
}

/**
 * `GET /v1/logs?app=APP|SYSTEM/SERVICE[&index=N]` or `?task=GUID`, with `follow`, `tail` (lines
 * per instance) and `since_ms` (epoch ms): NDJSON lines `{ts, source, line}` of every instance,
 * read from the cells' reps (rep-log-route.ts). Viewers may read (GET).
 */
export function registerLogStreamRoutes(app: FastifyInstance, options: LogStreamOptions): void {
  const typed = app.withTypeProvider<TypeBoxTypeProvider>();
  const open = new Set<AbortController>();
  app.addHook('preClose', async () => {
    for (const c of open) c.abort();
  });
  typed.get(
    '/v1/logs',
    {
      schema: {
        tags: ['logs'],
        summary:
          "Lines of an app's instances or a task (NDJSON, {ts, source, stream, line}); with follow, as they are written",
        querystring: Type.Object(
          {
            app: Type.Optional(Type.String({ minLength: 1, maxLength: 512 })),
            task: Type.Optional(Name()),
            // Query values are strings, never coerced (build-app.ts): digits and true/false.
            index: Type.Optional(Type.String({ pattern: '^[0-9]{1,5}$' })),
            follow: Type.Optional(Type.String({ pattern: '^(true|false)$' })),
            tail: Type.Optional(Type.String({ pattern: '^[0-9]{1,6}$' })),
            since_ms: Type.Optional(Type.String({ pattern: '^[0-9]{1,15}$' })),
          },
          { additionalProperties: false },
        ),
      },
    },
    async (request, reply) => {
      const raw = request.query;
      const number = (text: string | undefined) => (text === undefined ? undefined : Number(text));
      const q: LogsQuery = {
        ...(raw.app !== undefined ? { app: raw.app } : {}),
        ...(raw.task !== undefined ? { task: raw.task } : {}),
        ...(raw.index !== undefined ? { index: Number(raw.index) } : {}),
        follow: raw.follow === 'true',
        ...(raw.tail !== undefined ? { tail: Number(raw.tail) } : {}),
        ...(raw.since_ms !== undefined ? { since_ms: number(raw.since_ms) ?? 0 } : {}),
      };
      if ((q.app === undefined) === (q.task === undefined))
        throw new InvalidArgumentError('Name exactly one of app or task', { field: q.app ? 'task' : 'app' });
      const ref: AppRef = q.app !== undefined ? { app: q.app } : { task: q.task ?? '' };
      if (!(await refExists(options.store, ref))) throw missingRef(ref);
      reply.hijack();
      const res = reply.raw;
      res.writeHead(200, {
        'content-type': 'application/x-ndjson; charset=utf-8',
        'cache-control': 'no-cache',
        'x-accel-buffering': 'no',
      });
      const gone = new AbortController();
      open.add(gone);
      res.on('close', () => gone.abort());
      const fan = new LogFanIn(options.store, ref, q, res, gone.signal, options.finalizedLog);
      let timer: NodeJS.Timeout | undefined;
      let unsubscribe: (() => void) | undefined;
      try {
        await fan.attachAll(true);
        if (q.follow) {
          let refreshing = false;
          const refresh = () => {
            if (refreshing || gone.signal.aborted) return;
            refreshing = true;
            fan.attachAll(false).then(
              () => {
                refreshing = false;
              },
              () => {
                refreshing = false; // the BBS was unreachable this time: the next wake-up tries again
              },
            );
          };
          unsubscribe = options.onEvents?.(refresh);
          timer = setInterval(refresh, refreshMs);
          // A task's stream ends with the task; an app's follows until the client goes.
          await new Promise<void>((resolve) => {
            gone.signal.addEventListener('abort', () => resolve());
            if ('task' in ref) void untilTaskEnds(options.store, ref.task, fan, gone.signal).then(resolve);
          });
        }
        await fan.drained();
      } finally {
        clearInterval(timer);
        unsubscribe?.();
        gone.abort();
        open.delete(gone);
        res.end();
      }
    },
  );
}
