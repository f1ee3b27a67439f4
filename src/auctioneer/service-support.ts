/**
 * What the cluster services (auctioneer, converger) share: a logger shape that pino satisfies, the
 * context a lease runner hands a singleton, and an abortable sleep. The converger imports these
 * from here because it sits above the auctioneer in the layer order.
 */

/** pino's `logger.info(fields, message)` shape, so `berth server` passes its pino logger as is. */
export interface ServiceLogger {
  info(fields: Readonly<Record<string, unknown>>, message: string): void;
  warn(fields: Readonly<Record<string, unknown>>, message: string): void;
}

export const silentLogger: ServiceLogger = { info: () => {}, warn: () => {} };

/**
 * The argument of `Singleton.run` (src/api/singleton-lease.ts): the services are Singletons by
 * shape, so `startBbsServer({ singletons: [auctioneer, converger] })` runs each under its lease.
 */
export interface SingletonContext {
  /** Aborts when the lease is lost or the server stops: stop acting at once. */
  readonly signal: AbortSignal;
  /** The lease's fencing token. */
  readonly token: number;
  readonly holder: string;
}

/** Resolves after `ms`, or at once when `signal` aborts (never rejects). */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

/** A retry delay after `failures` consecutive failed rounds: doubling from 250 ms, capped. */
export function retryDelayMs(failures: number, capMs: number): number {
  return Math.min(capMs, 250 * 2 ** Math.min(failures - 1, 16));
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
