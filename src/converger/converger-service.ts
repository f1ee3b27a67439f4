import type { BbsStore, CellPresence, TaskStartRequest } from '../bbs/index.js';
import {
  describeError,
  LocalLoop,
  runLoop,
  type ServiceLogger,
  type SingletonContext,
  silentLogger,
  sleep,
  Wakeup,
} from '../core/index.js';
import type { RepApi } from '../rep/index.js';
import { ConvergenceApplier, type ConvergenceCounts } from './convergence-applier.js';
import { type ConvergenceConfig, planConvergence, planLostCells } from './convergence-plan.js';

export interface ConvergerConfig extends ConvergenceConfig {
  /** Time between passes. */
  readonly intervalMs: number;
  /**
   * Plan items applied at once (default 8); each is one BBS transaction. Unclaims are not among
   * them: they go in batches, one transaction each (unclaimBatchSize).
   */
  readonly concurrency?: number;
  /**
   * A stop for one instance is not asked again for this long (default: the unclaimed start
   * timeout): the rep pulls stop requests from the outbox, and a pass that finds the instance
   * still there only means the rep has not got to it yet.
   */
  readonly stopRepeatMs?: number;
  /**
   * The presence watch lists the live cells at most this often (default 1 s): it runs the
   * lost-cells pass the moment a cell's presence has expired, instead of waiting for the next
   * `intervalMs`.
   */
  readonly presenceCheckGapMs?: number;
}

export interface ConvergerServiceOptions {
  readonly bbs: BbsStore;
  readonly config: ConvergerConfig;
  readonly now?: () => Date;
  readonly logger?: ServiceLogger;
  /**
   * Optional push of stops straight to the owning rep (Diego sends stops to reps directly). The
   * stop request in the BBS outbox is written either way and is what makes the stop durable; the
   * push only saves the rep's poll interval. Failures are ignored.
   */
  readonly repClientFor?: (cell: CellPresence) => Pick<RepApi, 'stop'>;
  /**
   * Where PENDING tasks that waited past the kick interval go to be auctioned again (Diego's
   * converger calls the auctioneer's RequestTaskAuctions): `auctioneer.requestAuctions`. Without
   * it kicks are counted and logged but go nowhere; the task outbox still redelivers a request
   * its auctioneer never acknowledged.
   */
  readonly requestTaskAuctions?: (tasks: readonly TaskStartRequest[]) => void | Promise<void>;
}

/** What one pass did. `conflicts`: someone else moved the record first; the next pass re-plans. */
export interface ConvergencePassReport extends ConvergenceCounts {
  readonly durationMs: number;
}

/** Looked for this long after a presence's expiry, so the store's clock agrees it has expired. */
const expiryGraceMs = 50;

/**
 * The converger as a running service (seed 002 "Harmonizing DesiredLRPs with Actual LRPs", issue
 * 5 for tasks): each pass reads one BBS snapshot plus the tasks, asks the pure `planConvergence`
 * what to do, and has the `ConvergenceApplier` apply it under CAS. A cell whose presence lapses
 * gets a pass of its own at once, over its records only (`planLostCells`).
 *
 * A Singleton by shape (`name`, `run`): run it under a lease so one server converges at a time.
 */
export class ConvergerService {
  readonly name = 'converger';
  readonly #options: ConvergerServiceOptions;
  readonly #logger: ServiceLogger;
  readonly #now: () => Date;
  readonly #applier: ConvergenceApplier;
  #serial: Promise<unknown> = Promise.resolve();
  readonly #loop = new LocalLoop();
  readonly #wakeup = new Wakeup();
  /** The live cells last seen (by a pass or the presence watch): cell_id → its presence's expiry. */
  #cellExpiries = new Map<string, number>();

  constructor(options: ConvergerServiceOptions) {
    this.#options = options;
    this.#logger = options.logger ?? silentLogger;
    this.#now = options.now ?? (() => new Date());
    const { config } = options;
    this.#applier = new ConvergenceApplier({
      bbs: options.bbs,
      logger: this.#logger,
      stopRepeatMs: config.stopRepeatMs ?? config.unclaimedStartTimeoutMs,
      ...(config.concurrency !== undefined ? { concurrency: config.concurrency } : {}),
      ...(options.repClientFor ? { repClientFor: options.repClientFor } : {}),
      ...(options.requestTaskAuctions ? { requestTaskAuctions: options.requestTaskAuctions } : {}),
    });
  }

  /** One pass, now (on demand). Passes never overlap: a call while one runs waits for it. */
  runOnce(signal: AbortSignal = new AbortController().signal): Promise<ConvergencePassReport> {
    const result = this.#serial.then(() => this.#pass(signal));
    // catch-all: the caller of runOnce gets the failure; the chain only keeps passes in order.
    this.#serial = result.catch(() => {});
    return result;
  }

  /**
   * Passes every `intervalMs` until `signal` aborts, and a lost-cells pass at once when a cell's
   * presence expires (the presence watch); a failed pass is retried with back-off.
   */
  async run(context: Pick<SingletonContext, 'signal'>): Promise<void> {
    const { intervalMs } = this.#options.config;
    await Promise.all([
      runLoop({
        name: 'convergence pass',
        signal: context.signal,
        intervalMs,
        wakeup: this.#wakeup,
        backoff: { initialMs: 250, capMs: intervalMs },
        logger: this.#logger,
        round: async (signal) => {
          const report = await this.runOnce(signal);
          const acted = report.applied + report.conflicts + report.errors;
          if (acted > 0) this.#logger.info({ ...report }, 'convergence pass');
        },
      }),
      this.#watchPresences(context.signal),
    ]);
  }

  /**
   * An expiring presence writes nothing, so no event can tell of it: this sleeps until the earliest
   * expiry among the cells last seen, lists the live cells, and runs the lost-cells pass for those
   * gone. A cell that heartbeated meanwhile only moves the next look later. At most one listing
   * per `presenceCheckGapMs`, however many cells expire one after another; each look's pass covers
   * only the cells that look found gone, so one pass per look, each a few index reads, not a read
   * of every record per look.
   */
  async #watchPresences(signal: AbortSignal): Promise<void> {
    const { intervalMs, presenceCheckGapMs = 1_000 } = this.#options.config;
    while (!signal.aborted) {
      // No cell known yet (a new cluster, or before the first pass): look again soon.
      const untilExpiry =
        this.#cellExpiries.size === 0
          ? 0
          : Math.min(...this.#cellExpiries.values()) - this.#now().getTime() + expiryGraceMs;
      await sleep(Math.max(presenceCheckGapMs, Math.min(intervalMs, untilExpiry)), signal);
      if (signal.aborted) return;
      let live: CellPresence[];
      try {
        live = await this.#options.bbs.listCells();
      } catch (err) {
        // The next look, or the interval's pass, sees what this one could not.
        this.#logger.warn({ err: describeError(err) }, 'presence watch: listing cells failed');
        continue;
      }
      const liveIds = new Set(live.map((c) => c.cell_id));
      const gone = [...this.#cellExpiries.keys()].filter((id) => !liveIds.has(id));
      this.#rememberCells(live);
      if (gone.length > 0) {
        this.#logger.info({ cells: gone }, 'cell presences expired: converging now');
        try {
          const report = await this.#lostCellsPass(gone, live, signal);
          this.#logger.info({ ...report, cells: gone.length }, 'lost cells converged');
        } catch (err) {
          // The full pass covers every cell: it does what this one could not.
          this.#logger.warn({ err: describeError(err) }, 'lost-cells pass failed: a full pass follows');
          this.#wakeup.wake();
        }
      }
    }
  }

  /**
   * An expired presence writes nothing by itself: deleting it records its `cell_disappeared`, so
   * watchers of the event log (the console) learn of it without listing cells on a timer.
   */
  async #reapExpiredCells(): Promise<void> {
    try {
      const gone = await this.#options.bbs.expireCells();
      if (gone.length > 0) this.#logger.info({ cells: gone }, 'expired cell presences recorded');
    } catch (err) {
      // The next pass reaps them; convergence itself reads only live presences.
      this.#logger.warn({ err: describeError(err) }, 'recording expired cell presences failed');
    }
  }

  #rememberCells(cells: readonly CellPresence[]): void {
    this.#cellExpiries = new Map(cells.map((c) => [c.cell_id, Date.parse(c.expires_at)]));
  }

  /** Runs the interval loop without a lease (a single-server setup or a test). */
  start(): void {
    this.#loop.start((context) => this.run(context));
  }

  stop(): Promise<void> {
    return this.#loop.stop();
  }

  async #pass(signal: AbortSignal): Promise<ConvergencePassReport> {
    const started = this.#now().getTime();
    const { bbs, config } = this.#options;
    const [snapshot, tasks] = await Promise.all([bbs.readConvergenceSnapshot(), bbs.listTasks()]);
    this.#rememberCells(snapshot.cells);
    await this.#reapExpiredCells();
    const now = this.#now();
    const plan = planConvergence({
      desired: snapshot.desired_lrps,
      actuals: snapshot.actual_lrps,
      cells: snapshot.cells,
      domains: snapshot.domains,
      tasks,
      queuedStarts: snapshot.queued_lrp_starts,
      settled: snapshot.settled_instances,
      now,
      config,
    });
    const records = { actuals: snapshot.actual_lrps, cells: snapshot.cells, tasks };
    const counts = await this.#applier.apply(plan, records, now, signal);
    return { ...counts, durationMs: this.#now().getTime() - started };
  }

  /**
   * The pass for cells that just went, given the live cells the watch just listed: reads the
   * records on the lost ones (an index lookup each) instead of every record in the store, and
   * applies what `planLostCells` makes of them. At 100,000 instances a full pass reads them all,
   * and one per lapse seen kept the lost instances waiting behind each other's reads
   * (docs/performance.md, round 17).
   */
  async #lostCellsPass(
    cellIds: readonly string[],
    cells: readonly CellPresence[],
    signal: AbortSignal,
  ): Promise<ConvergencePassReport> {
    const started = this.#now().getTime();
    const { bbs, config } = this.#options;
    const [desired, domains, actuals, tasks] = await Promise.all([
      bbs.listDesiredLRPs(),
      bbs.listDomains(),
      Promise.all(cellIds.map((cell_id) => bbs.listActualLRPs({ cell_id }))).then((lists) => lists.flat()),
      Promise.all(cellIds.map((cell_id) => bbs.listTasks({ cell_id }))).then((lists) => lists.flat()),
    ]);
    await this.#reapExpiredCells();
    const now = this.#now();
    const plan = planLostCells({ desired, actuals, cells, domains, tasks, now, config });
    const counts = await this.#applier.apply(plan, { actuals, cells, tasks }, now, signal);
    return { ...counts, durationMs: this.#now().getTime() - started };
  }
}
