import type { FastifyInstance } from 'fastify';

/**
 * Back-pressure on new work (issue 20): while the start requests not yet placed pass a bound,
 * creating more LRPs or tasks is answered 429 with `Retry-After`, instead of the backlog (and the
 * auctioneer's memory) growing without bound. Reads, updates, deletes and `/healthz` are never
 * refused, so an overloaded server still answers and can be told to shed work.
 *
 * The count is read before the create's own transaction, not in it: creates admitted at the same
 * moment may each see room and together pass the bound. That race is bounded and harmless here.
 * It is bounded by the creates in flight between their check and their commit, each adding at
 * most `limits.maxInstances` start requests (one for a task). It is harmless because the bound
 * protects memory, and the backlog is rows in the outbox, not memory: the auctioneer holds at most
 * one batch (`batchSize`) of it whatever the outbox holds. The next create after such an overshoot
 * is refused. An exact cap would need the count inside every create's transaction, with a lock on
 * PostgreSQL, where two READ COMMITTED transactions would both see room: a cost on every create
 * for a bound that needs no precision.
 */
export interface AdmissionOptions {
  /** Start requests (one per LRP instance, one per task) waiting at most; at this many, creates get 429. */
  readonly maxPendingStarts: number;
  /** Seconds a refused client is told to wait (default 1). */
  readonly retryAfterS?: number;
  /** Start requests not yet acknowledged, counted up to `limit` (`SqlBbsStore.countPendingStarts`). */
  pendingStarts(limit: number): Promise<number>;
}

/** The routes that create work: the public creates and the internal operations behind BbsClient. */
const creatingRoutes: ReadonlySet<string> = new Set([
  'POST /v1/desired_lrps',
  'POST /v1/tasks',
  'POST /v1/internal/desire_lrp',
  'POST /v1/internal/desire_task',
]);

export function installAdmissionControl(app: FastifyInstance, options: AdmissionOptions): void {
  const retryAfterS = options.retryAfterS ?? 1;
  app.addHook('onRequest', async (request, reply) => {
    if (!creatingRoutes.has(`${request.method} ${request.routeOptions.url ?? ''}`)) return;
    const pending = await options.pendingStarts(options.maxPendingStarts);
    if (pending < options.maxPendingStarts) return;
    return reply
      .code(429)
      .header('retry-after', String(retryAfterS))
      .send({
        code: 'unavailable',
        message: `The server has ${pending} or more starts waiting to be placed; try again in ${retryAfterS}s`,
        details: { pending_starts: pending, max_pending_starts: options.maxPendingStarts },
      });
  });
}
