/**
 * The home of every background loop in berth (auctioneer, converger, rep passes, callback and
 * webhook delivery, lease renewal, event pruning): one abortable sleep, one wake-up, one back-off,
 * one loop. A loop's round does the work; the loop decides when the next round runs: after its
 * interval, at once when woken, later after a failure, and never once its signal aborts.
 */

/** pino's `logger.info(fields, message)` shape, so `berth server` passes its pino logger as is. */
export interface ServiceLogger {
  info(fields: Readonly<Record<string, unknown>>, message: string): void;
  warn(fields: Readonly<Record<string, unknown>>, message: string): void;
}

export const silentLogger: ServiceLogger = { info: () => {}, warn: () => {} };

/**
 * What a lease runner (src/api/singleton-lease.ts) hands a cluster singleton while it holds the
 * lease, and what a local run hands a loop without one.
 */
export interface SingletonContext {
  /** Aborts when the lease is lost or the server stops: stop acting at once. */
  readonly signal: AbortSignal;
  /** The lease's fencing token. */
  readonly token: number;
  readonly holder: string;
}

/** Resolves after `ms`, or at once when `signal` aborts (never rejects). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

export type WakeReason = 'woken' | 'timeout' | 'aborted';

/**
 * A doorbell for one waiting loop. `wake()` ends the current wait at once; a wake while nobody
 * waits is remembered (once), so an event that arrives during a round is not lost: the next wait
 * returns immediately and the loop runs another round.
 */
export class Wakeup {
  #pending = false;
  #ring: (() => void) | undefined;

  wake(): void {
    if (this.#ring) this.#ring();
    else this.#pending = true;
  }

  /** Waits up to `ms` for a wake; says why it returned. */
  wait(ms: number, signal: AbortSignal): Promise<WakeReason> {
    if (signal.aborted) return Promise.resolve('aborted');
    if (this.#pending) {
      this.#pending = false;
      return Promise.resolve('woken');
    }
    return new Promise<WakeReason>((resolve) => {
      const finish = (reason: WakeReason): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        this.#ring = undefined;
        resolve(reason);
      };
      const onAbort = (): void => finish('aborted');
      const timer = setTimeout(() => finish('timeout'), ms);
      signal.addEventListener('abort', onAbort, { once: true });
      this.#ring = () => finish('woken');
    });
  }
}

export interface BackoffPolicy {
  /** The delay after the first failure. */
  readonly initialMs: number;
  /** No delay is ever longer. */
  readonly capMs: number;
  /**
   * Spread each delay over its upper half at random, so peers that failed together (cells that
   * lost the server at once) do not all retry in the same millisecond.
   */
  readonly jitter?: boolean;
}

/**
 * The delay before retry number `failures` (1 = after the first failure): doubling from
 * `initialMs`, capped at `capMs`; with jitter, in [ceiling/2, ceiling] chosen by `random` ∈ [0, 1).
 * Never zero, so a loop that keeps failing never spins.
 */
export function backoffDelayMs(failures: number, policy: BackoffPolicy, random = 1): number {
  const ceiling = Math.min(policy.capMs, policy.initialMs * 2 ** Math.min(Math.max(0, failures - 1), 30));
  if (!policy.jitter) return ceiling;
  return Math.max(1, Math.round(ceiling / 2 + (ceiling / 2) * random));
}

/** The back-off state of one loop or one delivery target: counts failures until a success. */
export class Backoff {
  readonly #policy: BackoffPolicy;
  readonly #random: () => number;
  #failures = 0;

  constructor(policy: BackoffPolicy, random: () => number = Math.random) {
    this.#policy = policy;
    this.#random = random;
  }

  get failures(): number {
    return this.#failures;
  }

  /** Records a failure; returns how long to wait before the next try. */
  failed(): number {
    this.#failures += 1;
    return backoffDelayMs(this.#failures, this.#policy, this.#random());
  }

  succeeded(): void {
    this.#failures = 0;
  }
}

export interface LoopOptions {
  /** Named in the log line of a failed round. */
  readonly name: string;
  readonly signal: AbortSignal;
  /**
   * The pause between rounds that succeeded: the safety-net period. A function is asked before
   * each pause (a period the server paces, src/bbs/cell-pacing.ts).
   */
  readonly intervalMs: number | (() => number);
  /** The wait before the first round (default 0: at once), e.g. when the caller just did one itself. */
  readonly firstRoundInMs?: number;
  /**
   * Measure `intervalMs` from the start of each round instead of its end, so rounds keep their
   * rate however long each takes (a heartbeat that must land every interval): a round that took
   * the whole interval is followed by the next at once. Rounds never overlap either way.
   */
  readonly fixedRate?: boolean;
  /**
   * One unit of work. A throw counts as a failure and delays the next round by the back-off. It
   * may ask for the next round sooner than `intervalMs` (0: at once, e.g. a batch that took a full
   * page; or when a retry it scheduled falls due before the interval ends).
   */
  // biome-ignore lint/suspicious/noConfusingVoidType: most rounds are `async () => { ... }`, which return void.
  readonly round: (signal: AbortSignal) => Promise<RoundOutcome | undefined | void>;
  /** When given, `wake()` starts the next round at once instead of after the interval. */
  readonly wakeup?: Wakeup;
  /**
   * Rounds start at least this far apart, woken or not (measured with `now`): wake-ups that come
   * from every change in a busy store must not turn the loop into a busy loop.
   */
  readonly minGapMs?: number;
  readonly backoff?: BackoffPolicy;
  readonly logger?: ServiceLogger;
  /**
   * Also told of each failed round, with the error itself (the log line only has its message) and
   * the back-off before the next try.
   */
  readonly onError?: (err: unknown, retryInMs: number) => void;
  /** The jitter's random numbers in [0, 1), for a back-off with `jitter` (default Math.random). */
  readonly random?: () => number;
  /** The clock `minGapMs` is measured on (default `Date.now`). */
  readonly now?: () => number;
}

/** What a round may tell the loop about the next one. */
export interface RoundOutcome {
  /** The wait before the next round if shorter than the interval (a wake-up still ends it early). */
  readonly nextInMs?: number;
}

const defaultLoopBackoff: BackoffPolicy = { initialMs: 250, capMs: 30_000 };

/**
 * Runs `round` until `signal` aborts; resolves after the round in progress ends. A failed round is
 * logged and retried after a back-off (never sooner, even if woken: a wake-up storm must not turn
 * a failing store into a hot loop); a successful one resets the back-off.
 */
export async function runLoop(options: LoopOptions): Promise<void> {
  const { signal } = options;
  const backoff = new Backoff(options.backoff ?? defaultLoopBackoff, options.random);
  const logger = options.logger ?? silentLogger;
  const now = options.now ?? Date.now;
  if (options.firstRoundInMs) await sleep(options.firstRoundInMs, signal);
  while (!signal.aborted) {
    const startedAt = now();
    let waitMs: number;
    try {
      const outcome = await options.round(signal);
      backoff.succeeded();
      // Asked after the round, whose answer may have changed it.
      waitMs = typeof options.intervalMs === 'function' ? options.intervalMs() : options.intervalMs;
      if (outcome?.nextInMs !== undefined) waitMs = Math.max(0, Math.min(waitMs, outcome.nextInMs));
    } catch (err) {
      if (signal.aborted) return;
      const delayMs = backoff.failed();
      logger.warn(
        { loop: options.name, error: describeError(err), failures: backoff.failures, retry_in_ms: delayMs },
        `${options.name}: round failed`,
      );
      options.onError?.(err, delayMs);
      await sleep(delayMs, signal);
      continue;
    }
    if (signal.aborted) return;
    if (options.fixedRate) waitMs -= now() - startedAt;
    if (waitMs > 0) {
      if (options.wakeup) await options.wakeup.wait(waitMs, signal);
      else await sleep(waitMs, signal);
    }
    const gapLeftMs = (options.minGapMs ?? 0) - (now() - startedAt);
    if (gapLeftMs > 0) await sleep(gapLeftMs, signal);
  }
}

export function describeError(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Runs `fn` over `items` with at most `limit` calls in flight. */
export async function forEachLimited<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next++] as T;
      await fn(item);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
}

/**
 * A service's loop run without a lease (a single-server setup or a test): `start` runs it once
 * until `stop`, which aborts it and waits for the round in progress to end.
 */
export class LocalLoop {
  #local: { controller: AbortController; done: Promise<void> } | undefined;

  start(run: (context: Pick<SingletonContext, 'signal'>) => Promise<void>): void {
    if (this.#local) return;
    const controller = new AbortController();
    this.#local = { controller, done: run({ signal: controller.signal }) };
  }

  async stop(): Promise<void> {
    const local = this.#local;
    this.#local = undefined;
    if (!local) return;
    local.controller.abort();
    await local.done;
  }
}
