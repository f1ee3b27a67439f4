import type { BbsStore, CellPresence, StopRequestDelivery } from '../bbs/index.js';
import {
  describeError,
  forEachLimited,
  runLoop,
  type ServiceLogger,
  type SingletonContext,
  silentLogger,
  Wakeup,
} from '../core/index.js';
import type { RepApi } from '../rep/index.js';

export interface StopPusherOptions {
  readonly bbs: BbsStore;
  readonly repClientFor: (cell: CellPresence) => Pick<RepApi, 'stop'>;
  /** In-process news of committed BBS events by type (`SqlBbsStore.onEvents`). */
  readonly onStoreEvents?: (listener: (types: readonly string[]) => void) => () => void;
  /** The safety net between wake-ups (default 5 s); the reps' own polls are the other one. */
  readonly intervalMs?: number;
  /** Stop requests taken per round (default 100). */
  readonly batchSize?: number;
  /** Stops in flight at once (default 32). */
  readonly concurrency?: number;
  readonly logger?: ServiceLogger;
}

/** Events whose transaction may have written a stop request (a removal, a retire, a cancel). */
const stopRequestEvents: ReadonlySet<string> = new Set([
  'desired_lrp_removed',
  'desired_lrp_changed',
  'actual_lrp_changed',
  'actual_lrp_removed',
  'task_changed',
]);

/** How long a taken stop stays hidden from the rep's own poll: past the rep's graceful stop. */
const visibilityMs = 30_000;

/**
 * Delivers the stop-request outbox to the reps at once, as Diego's BBS calls the cell's
 * StopLRPInstance: each stop request written (a removed or scaled-down LRP, a retired instance, a
 * cancelled task) is taken, sent to its cell's rep (`POST /v1/stop`, which stops the container by
 * its guid and reconciles it) and acknowledged once the rep answered. The outbox stays the
 * durable record: a stop whose rep did not answer comes back after the visibility timeout, and
 * the rep's own poll takes it then. A Singleton by shape: one server pushes at a time.
 */
export class StopPusher {
  readonly name = 'stop-pusher';
  readonly #options: StopPusherOptions;
  readonly #logger: ServiceLogger;
  readonly #wakeup = new Wakeup();
  /** Pushes in flight, so a round does not end (nor a lease) with stops half delivered. */
  readonly #inFlight = new Set<Promise<void>>();

  constructor(options: StopPusherOptions) {
    this.#options = options;
    this.#logger = options.logger ?? silentLogger;
  }

  async run(context: Pick<SingletonContext, 'signal'>): Promise<void> {
    const unsubscribe = this.#options.onStoreEvents?.((types) => {
      if (types.some((t) => stopRequestEvents.has(t))) this.#wakeup.wake();
    });
    try {
      await runLoop({
        name: 'stop push',
        signal: context.signal,
        intervalMs: this.#options.intervalMs ?? 5_000,
        wakeup: this.#wakeup,
        // Every task and instance move wakes it (a stop hides among them): rounds, each one outbox
        // transaction, are at least this far apart; the first after a quiet spell runs at once.
        minGapMs: 50,
        logger: this.#logger,
        round: async () => {
          const taken = await this.pushOnce();
          // A full take means more is waiting.
          return taken >= (this.#options.batchSize ?? 100) ? { nextInMs: 0 } : undefined;
        },
      });
    } finally {
      unsubscribe?.();
      await Promise.all(this.#inFlight);
    }
  }

  /**
   * Takes what is in the outbox and starts pushing it; resolves with how many it took. Pushes are
   * not awaited: a rep's stop may wait out its app's graceful-stop timeout, which must not hold
   * the stops of other cells.
   */
  async pushOnce(): Promise<number> {
    const { bbs } = this.#options;
    const stops = await bbs.takeStopRequests({
      limit: this.#options.batchSize ?? 100,
      visibility_ms: visibilityMs,
    });
    if (stops.length === 0) return 0;
    const cells = new Map((await bbs.listCells()).map((c) => [c.cell_id, c]));
    const push = forEachLimited(stops, this.#options.concurrency ?? 32, (stop) => this.#push(stop, cells));
    this.#inFlight.add(push);
    void push.finally(() => this.#inFlight.delete(push));
    return stops.length;
  }

  async #push(stop: StopRequestDelivery, cells: ReadonlyMap<string, CellPresence>): Promise<void> {
    const cell = cells.get(stop.request.cell_id);
    // A cell without presence: its instances are gone with it, or it comes back and polls the
    // request itself once the visibility timeout has passed.
    if (!cell) return;
    try {
      await this.#options.repClientFor(cell).stop({
        process_guid: stop.request.process_guid,
        index: stop.request.index,
        instance_guid: stop.request.instance_guid,
      });
      await this.#options.bbs.ackStopRequests({ ids: [stop.id] });
    } catch (err) {
      this.#logger.warn(
        { cell_id: cell.cell_id, instance_guid: stop.request.instance_guid, err: describeError(err) },
        'stop push failed; the rep polls it later',
      );
    }
  }
}
