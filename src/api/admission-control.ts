import type { FastifyInstance } from 'fastify';

/**
 * Back-pressure on new work (issue 20): while the start requests not yet placed pass a bound,
 * creating more LRPs or tasks is answered 429 with `Retry-After`, instead of the backlog (and the
 * auctioneer's memory) growing without bound. Reads, updates, deletes and `/healthz` are never
 * refused, so an overloaded server still answers and can be told to shed work.
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
