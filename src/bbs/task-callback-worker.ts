import {
  backoffDelayMs,
  isSuperseded,
  refusedCallbackTarget,
  runLoop,
  type SingletonContext,
  Wakeup,
} from '../core/index.js';
import type { BbsStore } from './bbs-store.js';
import type { Task } from './bbs-types.js';
import type { SqlBbsStore } from './sql/sql-bbs-store.js';
import {
  SqlTaskDeliveryLog,
  type TaskDeliveryLog,
  type TaskDeliveryOutcome,
  type TaskDeliveryRecord,
} from './task-callback-log.js';

/**
 * Every knob of callback delivery. The defaults keep the whole retry schedule (1 + 2 + 4 + 8 s of
 * back-off plus at most five 10 s timeouts) well inside the converger's completed-task TTL
 * (2 min), so the TTL only ever deletes a task whose attempts are used up, and the timeout well
 * under its RESOLVING kick interval (30 s), so the converger never demotes a POST still in flight.
 */
export interface TaskCallbackConfig {
  /** POSTs per task, the first included; after the last retryable failure the task is left COMPLETED. */
  readonly maxAttempts: number;
  /** Back-off before retry n (n = 1 after the first failure): min(base × 2^(n−1), max). */
  readonly backoffBaseMs: number;
  readonly backoffMaxMs: number;
  /** One POST, connection to response headers. */
  readonly timeoutMs: number;
  /** How often the worker looks for completed tasks when nothing wakes it. */
  readonly pollMs: number;
  /** POSTs in flight at once. */
  readonly concurrency: number;
  /** Log rows of deleted tasks are kept this long. */
  readonly retentionMs: number;
  /**
   * POST to loopback, link-local and unspecified addresses too (src/core/callback-target.ts). Off,
   * such a callback is refused at delivery, after DNS, and the task's delivery is `rejected`.
   */
  readonly allowPrivateTargets: boolean;
}

export const defaultTaskCallbackConfig: TaskCallbackConfig = {
  maxAttempts: 5,
  backoffBaseMs: 1_000,
  backoffMaxMs: 30_000,
  timeoutMs: 10_000,
  pollMs: 1_000,
  concurrency: 8,
  retentionMs: 86_400_000,
  allowPrivateTargets: false,
};

/** Delay between failed attempt `attempt` and the next one. */
export function callbackBackoffMs(
  attempt: number,
  config: Pick<TaskCallbackConfig, 'backoffBaseMs' | 'backoffMaxMs'> = defaultTaskCallbackConfig,
): number {
  return backoffDelayMs(attempt, { initialMs: config.backoffBaseMs, capMs: config.backoffMaxMs });
}

/**
 * DESIGN.md's rule for an answer: 2xx delivered; 5xx, 408 and 429 are the receiver's temporary
 * trouble, so retry; anything else (other 4xx, and 3xx, which a POST must not follow blindly) will
 * not change by asking again, so the delivery is rejected.
 */
export function classifyCallbackStatus(status: number): 'delivered' | 'retry' | 'rejected' {
  if (status >= 200 && status < 300) return 'delivered';
  if (status >= 500 || status === 408 || status === 429) return 'retry';
  return 'rejected';
}

export interface TaskCallbackWorkerOptions {
  readonly store: BbsStore;
  readonly log: TaskDeliveryLog;
  readonly config?: Partial<TaskCallbackConfig>;
  /** Wall clock in ms (back-off due times, log timestamps); tests inject one. */
  readonly now?: () => number;
  readonly fetch?: typeof fetch;
  /**
   * Wake-up on committed store changes (SqlBbsStore.onEvents), so a completed task is POSTed at
   * once instead of at the next poll. Returns the unsubscribe function.
   */
  readonly onStoreChange?: (listener: () => void) => () => void;
  /** Failures of the worker itself (store unreachable…); delivery failures go to the log. */
  readonly onError?: (err: unknown) => void;
}

/** What one pass did, for tests and logs. */
export interface TaskCallbackPass {
  readonly attempted: number;
  readonly finished: number;
  /** When the earliest task waiting on a back-off becomes due (ms), if any. */
  readonly nextDueAt: number | undefined;
}

interface DueTask {
  readonly task: Task;
  readonly attempt: number;
}

/**
 * Delivers completion callbacks (DESIGN.md "cluster", Tasks). Runs as the `task-callbacks`
 * singleton, so one server of a cluster POSTs each attempt. A pass:
 *
 * 1. reads COMPLETED tasks with a `completion_callback_url` and their delivery logs;
 * 2. for each whose back-off has passed, CASes it COMPLETED → RESOLVING (losing that CAS means a
 *    consumer or the converger moved it: skip), POSTs the completed task as JSON, logs the attempt,
 *    then deletes the task (2xx, rejected) or demotes it to COMPLETED (retry, exhausted).
 *
 * Each step is its own transaction, so a crash between them is repaired by the next pass: a task
 * left RESOLVING is demoted by the converger after its kick interval and POSTed again (delivery is
 * at least once, as any webhook's); a task whose log already says delivered or rejected is deleted
 * without another POST.
 */
export class TaskCallbackWorker {
  readonly config: TaskCallbackConfig;
  readonly #store: BbsStore;
  readonly #log: TaskDeliveryLog;
  readonly #now: () => number;
  readonly #fetch: typeof fetch;
  readonly #onStoreChange: TaskCallbackWorkerOptions['onStoreChange'];
  readonly #onError: (err: unknown) => void;
  #lastPruneAt = Number.NEGATIVE_INFINITY;

  constructor(options: TaskCallbackWorkerOptions) {
    this.config = { ...defaultTaskCallbackConfig, ...options.config };
    if (!(this.config.maxAttempts >= 1)) throw new RangeError('maxAttempts must be at least 1');
    this.#store = options.store;
    this.#log = options.log;
    this.#now = options.now ?? Date.now;
    this.#fetch = options.fetch ?? fetch;
    this.#onStoreChange = options.onStoreChange;
    this.#onError = options.onError ?? (() => {});
  }

  /** Passes until `signal` aborts: after each, waits for the poll interval, a store change or a due back-off. */
  async run({ signal }: Pick<SingletonContext, 'signal'>): Promise<void> {
    const wakeup = new Wakeup();
    const unsubscribe = this.#onStoreChange?.(() => wakeup.wake());
    try {
      await runLoop({
        name: 'task callbacks',
        signal,
        intervalMs: this.config.pollMs,
        wakeup,
        // Wake-ups come from every committed change in the cluster (this worker's own included), so
        // passes are at least this far apart: a busy BBS must not turn the worker into a busy loop.
        minGapMs: Math.min(100, this.config.pollMs),
        now: this.#now,
        // A failed pass (the store unreachable) is tried again after the poll interval, then later.
        backoff: { initialMs: this.config.pollMs, capMs: Math.max(this.config.pollMs, 30_000) },
        onError: this.#onError,
        round: async () => {
          const { nextDueAt } = await this.pass();
          return nextDueAt === undefined ? undefined : { nextInMs: nextDueAt - this.#now() };
        },
      });
    } finally {
      unsubscribe?.();
    }
  }

  /** One pass over the completed tasks; every due delivery is attempted once. */
  async pass(): Promise<TaskCallbackPass> {
    const now = this.#now();
    await this.#pruneNow(now);
    const tasks = (await this.#store.listTasks({ state: 'COMPLETED' })).filter(
      (t) => t.completion_callback_url !== '',
    );
    if (tasks.length === 0) return { attempted: 0, finished: 0, nextDueAt: undefined };
    const logs = await this.#log.listForCompletedTasks();
    const due: DueTask[] = [];
    let finished = 0;
    let nextDueAt: number | undefined;
    for (const task of tasks) {
      const attempts = (logs.get(task.task_guid) ?? []).filter(
        (r) => r.task_epoch === task.modification_tag.epoch,
      );
      const last = attempts.at(-1);
      if (last?.outcome === 'delivered' || last?.outcome === 'rejected') {
        // Logged as done but not deleted (the server stopped in between): finish without a POST.
        if (await this.#settle(() => this.#store.deleteTask(taskCas(task)))) finished++;
        continue;
      }
      if (last?.outcome === 'exhausted' || attempts.length >= this.config.maxAttempts) continue;
      if (last) {
        const dueAt =
          Date.parse(last.at) + last.duration_ms + callbackBackoffMs(attempts.length, this.config);
        if (dueAt > now) {
          nextDueAt = nextDueAt === undefined ? dueAt : Math.min(nextDueAt, dueAt);
          continue;
        }
      }
      due.push({ task, attempt: attempts.length + 1 });
    }
    let next = 0;
    const worker = async () => {
      for (let item = due[next++]; item; item = due[next++]) {
        try {
          await this.#deliver(item);
        } catch (err) {
          this.#onError(err);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.config.concurrency, due.length) }, worker));
    return { attempted: due.length, finished, nextDueAt };
  }

  async #deliver({ task, attempt }: DueTask): Promise<void> {
    // RESOLVING first: a consumer's resolve or the converger's TTL delete now loses its CAS (or we
    // lose ours), so a task is never POSTed while someone else finishes it.
    let resolving: Task;
    try {
      resolving = await this.#store.resolvingTask(taskCas(task));
    } catch (err) {
      if (isSuperseded(err)) return;
      throw err;
    }
    const url = task.completion_callback_url;
    const startedAt = this.#now();
    const answer = await this.#post(url, task, attempt);
    const kind = answer.status !== undefined ? classifyCallbackStatus(answer.status) : answer.verdict;
    const outcome: TaskDeliveryOutcome =
      kind === 'retry' ? (attempt >= this.config.maxAttempts ? 'exhausted' : 'retrying') : kind;
    const entry: TaskDeliveryRecord = {
      task_guid: task.task_guid,
      task_epoch: task.modification_tag.epoch,
      url,
      attempt,
      at: new Date(startedAt).toISOString(),
      ...(answer.status !== undefined ? { status_code: answer.status } : {}),
      ...(answer.error !== undefined ? { error: answer.error } : {}),
      outcome,
      duration_ms: Math.max(0, this.#now() - startedAt),
    };
    try {
      await this.#log.record(entry);
    } finally {
      // Even when the log write failed, never leave the task RESOLVING: that would stall it until
      // the converger's kick interval.
      const cas = taskCas(resolving);
      if (outcome === 'delivered' || outcome === 'rejected') {
        await this.#settle(() => this.#store.deleteTask(cas));
      } else {
        await this.#settle(() => this.#store.demoteResolvingTask(cas));
      }
    }
  }

  /** POSTs the completed task. `verdict` classifies answers that have no status. */
  async #post(
    url: string,
    task: Task,
    attempt: number,
  ): Promise<{ status?: number; error?: string; verdict: 'retry' | 'rejected' }> {
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      return { error: `invalid callback URL "${url}"`, verdict: 'rejected' };
    }
    if (target.protocol !== 'http:' && target.protocol !== 'https:') {
      return { error: `unsupported callback URL scheme "${target.protocol}"`, verdict: 'rejected' };
    }
    const refused = await refusedCallbackTarget(url, { allowPrivate: this.config.allowPrivateTargets });
    if (refused !== undefined) return { error: refused, verdict: 'rejected' };
    try {
      const response = await this.#fetch(target, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'berth-task-callback',
          'x-berth-task-guid': task.task_guid,
          'x-berth-delivery-attempt': String(attempt),
        },
        body: JSON.stringify(task),
        redirect: 'manual',
        signal: AbortSignal.timeout(this.config.timeoutMs),
      });
      // The body is not ours to read; release the connection.
      // catch-all: a body that fails to cancel has nothing left for us; the status is what counts.
      await response.body?.cancel().catch(() => {});
      return { status: response.status, verdict: 'retry' };
    } catch (err) {
      return { error: describeFetchError(err, this.config.timeoutMs), verdict: 'retry' };
    }
  }

  /** Runs a CAS on the task; a lost race (someone else moved or deleted it) is not an error. */
  async #settle(run: () => Promise<unknown>): Promise<boolean> {
    try {
      await run();
      return true;
    } catch (err) {
      if (isSuperseded(err)) return false;
      throw err;
    }
  }

  async #pruneNow(now: number): Promise<void> {
    // Hourly is plenty: the rows are small and only kept for humans.
    if (now - this.#lastPruneAt < 3_600_000) return;
    this.#lastPruneAt = now;
    await this.#log.prune({ before: new Date(now - this.config.retentionMs).toISOString() });
  }
}

function taskCas(task: Task) {
  return { task_guid: task.task_guid, expected: task.modification_tag };
}

function describeFetchError(err: unknown, timeoutMs: number): string {
  if (err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError')) {
    return `timed out after ${timeoutMs} ms`;
  }
  if (err instanceof Error) {
    const cause = err.cause;
    if (cause instanceof Error) {
      const code = (cause as NodeJS.ErrnoException).code;
      return code ? `${code}: ${cause.message}` : cause.message;
    }
    return err.message;
  }
  return String(err);
}

/**
 * The worker as a server singleton (structurally src/api's `Singleton`): built on the server's own
 * SQL store, woken by its commits, named `task-callbacks` in `GET /v1/leases`.
 */
export function taskCallbackSingleton(
  store: SqlBbsStore,
  options: { readonly config?: Partial<TaskCallbackConfig>; readonly onError?: (err: unknown) => void } = {},
): { readonly name: string; run(context: Pick<SingletonContext, 'signal'>): Promise<void> } {
  return {
    name: 'task-callbacks',
    run: ({ signal }) =>
      new TaskCallbackWorker({
        store,
        log: new SqlTaskDeliveryLog(store),
        ...(options.config ? { config: options.config } : {}),
        ...(options.onError ? { onError: options.onError } : {}),
        onStoreChange: (listener) => store.onEvents(listener),
      }).run({ signal }),
  };
}
