import type { FastifyInstance } from 'fastify';
import { limits } from '../core/index.js';

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
 *
 * Nor is the count read for every create: a create is admitted without a read while the count
 * of the last read, plus the most that every create admitted since its read began could have
 * added (`limits.maxInstances` starts for an LRP, one for a task), stays under the bound, and that
 * read is less than a second old. The estimate only errs high, so it admits nothing a read would
 * refuse, apart from the race above (and other servers' creates, which no read here can see
 * before they commit). On PostgreSQL a read is one more wait for a pooled connection: under a
 * burst, each desire waited for two.
 */
export interface AdmissionOptions {
  /** Start requests (one per LRP instance, one per task) waiting at most; at this many, creates get 429. */
  readonly maxPendingStarts: number;
  /** Seconds a refused client is told to wait (default 1). */
  readonly retryAfterS?: number;
  /** Start requests not yet acknowledged, counted up to `limit` (`SqlBbsStore.countPendingStarts`). */
  pendingStarts(limit: number): Promise<number>;
  /** Monotonic milliseconds (tests move it). */
  readonly now?: () => number;
}

/** How old the last count may be for a create to be admitted on it without a read. */
const countFreshForMs = 1000;

/**
 * The pending starts as far as this server knows, from its last read and the creates it admitted
 * since that read began. Pure: the hook does the reading.
 */
export class PendingStartsEstimate {
  readonly #bound: number;
  readonly #now: () => number;
  /** Creates admitted so far, and each one's worst case, summed. */
  #admittedStarts = 0;
  #base: { readonly count: number; readonly admittedBefore: number; readonly startedAt: number } | undefined;

  constructor(bound: number, now: () => number) {
    this.#bound = bound;
    this.#now = now;
  }

  /** Whether a create may be admitted on what is known, without a read. */
  admitsWithoutReading(): boolean {
    const base = this.#base;
    if (!base || this.#now() - base.startedAt >= countFreshForMs) return false;
    return base.count + (this.#admittedStarts - base.admittedBefore) < this.#bound;
  }

  /** A read is starting; call the returned function with what it counted. */
  reading(): (count: number) => void {
    const startedAt = this.#now();
    const admittedBefore = this.#admittedStarts;
    return (count) => {
      // Of two reads in flight, the one that began later counted more of what was admitted.
      if (this.#base && this.#base.startedAt > startedAt) return;
      this.#base = { count, admittedBefore, startedAt };
    };
  }

  /** A create was admitted that adds at most `starts` start requests. */
  admitted(starts: number): void {
    this.#admittedStarts += starts;
  }
}

/** The routes that create work: the public creates and the internal operations behind BbsClient. */
const creatingRoutes: ReadonlySet<string> = new Set([
  'POST /v1/desired_lrps',
  'POST /v1/tasks',
  'POST /v1/internal/desire_lrp',
  'POST /v1/internal/desire_task',
]);

/** The most start requests one create on a route can add: an LRP's instances, or one task. */
function mostStartsOf(route: string): number {
  return route.endsWith('task') || route.endsWith('tasks') ? 1 : limits.maxInstances;
}

export function installAdmissionControl(app: FastifyInstance, options: AdmissionOptions): void {
  const retryAfterS = options.retryAfterS ?? 1;
  const estimate = new PendingStartsEstimate(
    options.maxPendingStarts,
    options.now ?? (() => performance.now()),
  );
  app.addHook('onRequest', async (request, reply) => {
    const route = `${request.method} ${request.routeOptions.url ?? ''}`;
    if (!creatingRoutes.has(route)) return;
    if (estimate.admitsWithoutReading()) {
      estimate.admitted(mostStartsOf(route));
      return;
    }
    const counted = estimate.reading();
    const pending = await options.pendingStarts(options.maxPendingStarts);
    counted(pending);
    if (pending < options.maxPendingStarts) {
      estimate.admitted(mostStartsOf(route));
      return;
    }
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
