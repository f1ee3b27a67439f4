import { AuctioneerService, StopPusher } from '../auctioneer/index.js';
import type { BbsStore } from '../bbs/index.js';
import { ConvergerService, defaultConvergenceConfig } from '../converger/index.js';
import type { ServiceLogger } from '../core/index.js';
import { type CrashPolicy, defaultCrashPolicy, repClientForCell } from '../rep/index.js';
import type { Singleton } from './singleton-lease.js';

export interface ClusterTimings {
  readonly convergenceIntervalMs?: number;
  readonly auctionIntervalMs?: number;
  readonly crashPolicy?: CrashPolicy;
  readonly unclaimedStartTimeoutMs?: number;
  readonly taskKickIntervalMs?: number;
  readonly taskPendingLimitMs?: number;
  readonly taskCompletedTtlMs?: number;
  /** Per rep call; the reps' tokens come with their presences (`repClientForCell`). */
  readonly repTimeoutMs?: number;
}

/** `logger` with `service` on every line (pino's child when it has one). */
function childLogger(logger: ServiceLogger, service: string): ServiceLogger {
  const withChild = logger as ServiceLogger & {
    child?: (bindings: Record<string, unknown>) => ServiceLogger;
  };
  if (typeof withChild.child === 'function') return withChild.child({ service });
  return {
    info: (fields, message) => logger.info({ service, ...fields }, message),
    warn: (fields, message) => logger.warn({ service, ...fields }, message),
  };
}

/** The server's store, which may announce committed events in-process (`SqlBbsStore.onEvents`). */
type ClusterStore = BbsStore & {
  onEvents?(listener: (types: readonly string[]) => void): () => void;
};

/**
 * The auctioneer and the converger, each a singleton under a lease in the store: whichever
 * server holds the lease places work and heals the cluster; the others stand by. The auctioneer
 * wakes on the store's events, so new work moves at once; the intervals are the safety net.
 */
export function clusterSingletons(
  store: ClusterStore,
  timings: ClusterTimings = {},
  logger?: ServiceLogger,
): Singleton[] {
  // Each service's lines name it: "convergence pass", "cell presences expired: converging now".
  const loggerOf = (service: string) => (logger ? { logger: childLogger(logger, service) } : {});
  const repClientFor = (cell: Parameters<typeof repClientForCell>[0]) =>
    repClientForCell(cell, timings.repTimeoutMs !== undefined ? { timeoutMs: timings.repTimeoutMs } : {});
  const onStoreEvents = store.onEvents
    ? (listener: (types: readonly string[]) => void) => store.onEvents?.(listener) ?? (() => {})
    : undefined;
  const auctioneer = new AuctioneerService({
    bbs: store,
    repClientFor,
    config: { batchIntervalMs: timings.auctionIntervalMs ?? 500 },
    ...(onStoreEvents ? { onStoreEvents } : {}),
    ...loggerOf('auctioneer'),
  });
  const converger = new ConvergerService({
    bbs: store,
    repClientFor,
    requestTaskAuctions: (tasks) => auctioneer.requestAuctions({ tasks }),
    ...loggerOf('converger'),
    config: {
      ...defaultConvergenceConfig,
      crashPolicy: timings.crashPolicy ?? defaultCrashPolicy,
      intervalMs: timings.convergenceIntervalMs ?? 30_000,
      ...(timings.unclaimedStartTimeoutMs !== undefined
        ? { unclaimedStartTimeoutMs: timings.unclaimedStartTimeoutMs }
        : {}),
      ...(timings.taskKickIntervalMs !== undefined ? { taskKickIntervalMs: timings.taskKickIntervalMs } : {}),
      ...(timings.taskPendingLimitMs !== undefined ? { taskPendingLimitMs: timings.taskPendingLimitMs } : {}),
      ...(timings.taskCompletedTtlMs !== undefined ? { taskCompletedTtlMs: timings.taskCompletedTtlMs } : {}),
    },
  });
  // Stops reach the reps at once instead of at their next poll.
  const stopPusher = new StopPusher({
    bbs: store,
    repClientFor,
    ...(onStoreEvents ? { onStoreEvents } : {}),
    ...loggerOf('stop-pusher'),
  });
  return [auctioneer, converger, stopPusher];
}
