import {
  actualLrpKey,
  type BbsStore,
  type CasActualLRPRequest,
  type CellPresence,
  type ConvergenceActualLRP,
  type Task,
  type TaskStartRequest,
} from '../bbs/index.js';
import {
  describeError,
  forEachLimited,
  isSuperseded,
  LocalLoop,
  runLoop,
  type ServiceLogger,
  type SingletonContext,
  silentLogger,
  sleep,
  supersededCodes,
  Wakeup,
} from '../core/index.js';
import type { RepApi } from '../rep/index.js';
import {
  type ConvergenceConfig,
  type LRPConvergenceItem,
  planConvergence,
  type TaskConvergenceItem,
} from './convergence-plan.js';

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
   * The presence watch lists the live cells at most this often (default 1 s): it wakes a pass the
   * moment a cell's presence has expired, instead of at the next `intervalMs`.
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

export type ConvergenceItemKind = LRPConvergenceItem['kind'] | TaskConvergenceItem['kind'];

/** What one pass did. `conflicts`: someone else moved the record first; the next pass re-plans. */
export interface ConvergencePassReport {
  readonly planned: Readonly<Partial<Record<ConvergenceItemKind, number>>>;
  readonly applied: number;
  readonly conflicts: number;
  /** Items not applied on purpose (a stop already asked for recently, a pass aborted). */
  readonly skipped: number;
  readonly errors: number;
  readonly durationMs: number;
}

/** Looked for this long after a presence's expiry, so the store's clock agrees it has expired. */
const expiryGraceMs = 50;

type TaskWriteItem = Exclude<TaskConvergenceItem, { kind: 'kick-task' }>;
/** The plan items that are one unclaim each (and so one start request): applied in batches. */
type UnclaimItem = Extract<
  LRPConvergenceItem,
  { kind: 'unclaim-and-start' | 'restart-crashed' | 're-emit-start' }
>;
type OtherLRPItem = Exclude<LRPConvergenceItem, UnclaimItem>;

function isUnclaim(item: LRPConvergenceItem): item is UnclaimItem {
  return (
    item.kind === 'unclaim-and-start' || item.kind === 'restart-crashed' || item.kind === 're-emit-start'
  );
}

/**
 * Unclaims per transaction. A lost cell's instances go back together, so their start requests
 * reach the auctioneer at once and one auction places them, each cell claiming its share in one
 * request; given back one transaction each, they trickled in at the rate of commits (an fsync each
 * on PostgreSQL) and every one was auctioned, claimed and started alone (docs/performance.md).
 */
const unclaimBatchSize = 1000;
type ItemOutcome = 'applied' | 'conflict' | 'skipped' | 'error';

/**
 * The converger as a running service (seed 002 "Harmonizing DesiredLRPs with Actual LRPs", issue
 * 5 for tasks): each pass reads one BBS snapshot plus the tasks, asks the pure `planConvergence`
 * what to do, and applies every item with the BBS operation that does it under a CAS on the tag
 * the plan was made from. A lost CAS (or a record that is already gone or has moved on) is not
 * an error: someone else acted first, and the next pass plans from fresh state.
 *
 * Starts are never sent from here: `createActualLRP` and `unclaimActualLRPs` write the start
 * request into the BBS outbox in the same transaction. Stops of CLAIMED/RUNNING instances go
 * through `retireActualLRP`, which writes a stop request for the owning cell's rep; UNCLAIMED and
 * CRASHED instances, and any on a vanished cell, are compare-and-deleted.
 *
 * A Singleton by shape (`name`, `run`): run it under a lease so one server converges at a time.
 */
export class ConvergerService {
  readonly name = 'converger';
  readonly #options: ConvergerServiceOptions;
  readonly #logger: ServiceLogger;
  readonly #now: () => Date;
  /** instance_guid → when its stop was last asked, so a slow rep is not flooded with repeats. */
  readonly #stopsAsked = new Map<string, number>();
  #serial: Promise<unknown> = Promise.resolve();
  readonly #loop = new LocalLoop();
  readonly #wakeup = new Wakeup();
  /** The live cells last seen (by a pass or the presence watch): cell_id → its presence's expiry. */
  #cellExpiries = new Map<string, number>();

  constructor(options: ConvergerServiceOptions) {
    this.#options = options;
    this.#logger = options.logger ?? silentLogger;
    this.#now = options.now ?? (() => new Date());
  }

  /** One pass, now (on demand). Passes never overlap: a call while one runs waits for it. */
  runOnce(signal: AbortSignal = new AbortController().signal): Promise<ConvergencePassReport> {
    const result = this.#serial.then(() => this.#pass(signal));
    // catch-all: the caller of runOnce gets the failure; the chain only keeps passes in order.
    this.#serial = result.catch(() => {});
    return result;
  }

  /**
   * Passes every `intervalMs` until `signal` aborts, and at once when a cell's presence expires
   * (the presence watch); a failed pass is retried with back-off.
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
   * expiry among the cells last seen, lists the live cells, and wakes a pass when one is gone. A
   * cell that heartbeated meanwhile only moves the next look later. At most one listing per
   * `presenceCheckGapMs`, however many cells expire one after another.
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
        this.#wakeup.wake();
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
      now,
      config,
    });

    // The plan names records by key; the applier needs the tags and owners they were planned from.
    // Indexed only when there is something to apply: a healthy cluster's pass is the read and plan.
    const instances = new Map<string, ConvergenceActualLRP>();
    const evacuating = new Map<string, ConvergenceActualLRP>();
    if (plan.lrps.length > 0)
      for (const a of snapshot.actual_lrps) (a.evacuating ? evacuating : instances).set(actualLrpKey(a), a);
    const cells = new Map(snapshot.cells.map((c) => [c.cell_id, c]));
    const tasksByGuid = new Map(tasks.map((t) => [t.task_guid, t]));

    const planned: Partial<Record<ConvergenceItemKind, number>> = {};
    const counts: Record<ItemOutcome, number> = { applied: 0, conflict: 0, skipped: 0, error: 0 };
    const count = (outcome: ItemOutcome): void => {
      counts[outcome]++;
    };
    for (const item of [...plan.lrps, ...plan.tasks]) planned[item.kind] = (planned[item.kind] ?? 0) + 1;

    const unclaims: UnclaimItem[] = [];
    const others: OtherLRPItem[] = [];
    for (const item of plan.lrps) {
      if (isUnclaim(item)) unclaims.push(item);
      else others.push(item);
    }
    for (const outcome of await this.#applyUnclaims(unclaims, instances, signal)) count(outcome);
    const concurrency = config.concurrency ?? 8;
    await forEachLimited(others, concurrency, async (item) => {
      count(signal.aborted ? 'skipped' : await this.#applyLRP(item, instances, evacuating, cells, now));
    });

    const kicks: TaskStartRequest[] = [];
    const taskWrites: TaskWriteItem[] = [];
    for (const item of plan.tasks) {
      if (item.kind !== 'kick-task') taskWrites.push(item);
      else {
        const task = tasksByGuid.get(item.taskGuid);
        if (task) kicks.push(taskStartRequest(task));
      }
    }
    await forEachLimited(taskWrites, concurrency, async (item) => {
      count(signal.aborted ? 'skipped' : await this.#applyTask(item));
    });
    if (kicks.length > 0) {
      if (signal.aborted || !this.#options.requestTaskAuctions) counts.skipped += kicks.length;
      else {
        try {
          await this.#options.requestTaskAuctions(kicks);
          counts.applied += kicks.length;
        } catch (err) {
          counts.error += kicks.length;
          this.#logger.warn({ err: describeError(err), tasks: kicks.length }, 'kicking tasks failed');
        }
      }
    }
    this.#forgetOldStops(now.getTime());

    return {
      planned,
      applied: counts.applied,
      conflicts: counts.conflict,
      skipped: counts.skipped,
      errors: counts.error,
      durationMs: this.#now().getTime() - started,
    };
  }

  /**
   * Every unclaim of the pass, in batches of one transaction each: an instance on a vanished cell
   * or crashed and due a restart goes back to UNCLAIMED, and one UNCLAIMED too long is re-emitted
   * (UNCLAIMED → UNCLAIMED, a new `since`). The BBS writes each one's start request in the same
   * transaction. Each item's answer is its own: a lost CAS is a conflict, as for single writes.
   */
  async #applyUnclaims(
    items: readonly UnclaimItem[],
    instances: ReadonlyMap<string, ConvergenceActualLRP>,
    signal: AbortSignal,
  ): Promise<ItemOutcome[]> {
    const outcomes: ItemOutcome[] = [];
    const requests: CasActualLRPRequest[] = [];
    for (const item of items) {
      const ref = { process_guid: item.key.process_guid, index: item.key.index };
      const expected =
        item.kind === 're-emit-start' ? instances.get(actualLrpKey(ref))?.modification_tag : item.expected;
      if (expected === undefined) outcomes.push('conflict');
      else requests.push({ ...ref, expected });
    }
    for (let at = 0; at < requests.length; at += unclaimBatchSize) {
      const batch = requests.slice(at, at + unclaimBatchSize);
      if (signal.aborted) {
        outcomes.push(...batch.map((): ItemOutcome => 'skipped'));
        continue;
      }
      try {
        const { results } = await this.#options.bbs.unclaimActualLRPs({ unclaims: batch });
        results.forEach((result, i) => {
          if ('actual_lrp' in result) outcomes.push('applied');
          else if (supersededCodes.has(result.error.code)) outcomes.push('conflict');
          else {
            const id = batch[i] ? actualLrpKey(batch[i]) : '';
            this.#logger.warn({ kind: 'unclaim', id, err: result.error }, 'convergence item failed');
            outcomes.push('error');
          }
        });
      } catch (err) {
        this.#logger.warn(
          { kind: 'unclaim', items: batch.length, err: describeError(err) },
          'convergence unclaims failed',
        );
        outcomes.push(...batch.map((): ItemOutcome => 'error'));
      }
    }
    return outcomes;
  }

  async #applyLRP(
    item: OtherLRPItem,
    instances: ReadonlyMap<string, ConvergenceActualLRP>,
    evacuating: ReadonlyMap<string, ConvergenceActualLRP>,
    cells: ReadonlyMap<string, CellPresence>,
    now: Date,
  ): Promise<ItemOutcome> {
    const { bbs } = this.#options;
    const ref = { process_guid: item.key.process_guid, index: item.key.index };
    return this.#attempt(item.kind, actualLrpKey(ref), async () => {
      switch (item.kind) {
        case 'create-and-start':
          await bbs.createActualLRP(ref);
          return 'applied';
        case 'remove-actual':
          await bbs.removeActualLRP({ ...ref, expected: item.expected });
          return 'applied';
        case 'stop': {
          const current = instances.get(actualLrpKey(ref));
          if (!current) return 'conflict';
          const askedAt = this.#stopsAsked.get(item.instance.instance_guid);
          if (askedAt !== undefined && now.getTime() - askedAt < this.#stopRepeatMs()) return 'skipped';
          const result = await bbs.retireActualLRP({ ...ref, expected: current.modification_tag });
          this.#stopsAsked.set(item.instance.instance_guid, now.getTime());
          const stop = result.stop_request;
          const cell = stop ? cells.get(stop.cell_id) : undefined;
          if (stop && cell && this.#options.repClientFor) {
            this.#options
              .repClientFor(cell)
              .stop({ process_guid: stop.process_guid, index: stop.index, instance_guid: stop.instance_guid })
              // catch-all: best effort; the outbox row already guarantees the stop.
              .catch(() => {});
          }
          return 'applied';
        }
        case 'remove-evacuating': {
          const copy = evacuating.get(actualLrpKey(ref));
          if (!copy) return 'conflict';
          await bbs.removeEvacuatingActualLRP({
            ...ref,
            expected: item.expected,
            instance_key: { instance_guid: copy.instance_guid, cell_id: copy.cell_id },
          });
          return 'applied';
        }
      }
    });
  }

  async #applyTask(item: TaskWriteItem): Promise<ItemOutcome> {
    const { bbs } = this.#options;
    const task_guid = item.taskGuid;
    return this.#attempt(item.kind, task_guid, async () => {
      switch (item.kind) {
        case 'fail-task':
          await bbs.failTask({ task_guid, expected: item.expected, failure_reason: item.reason });
          return 'applied';
        case 'demote-resolving':
          await bbs.demoteResolvingTask({ task_guid, expected: item.expected });
          return 'applied';
        case 'delete-task':
          await bbs.deleteTask({ task_guid, expected: item.expected });
          return 'applied';
      }
    });
  }

  /**
   * Runs one item's write. A lost CAS, a record already gone or created, or one that moved to a
   * state the move no longer applies to, all mean another writer got there first: a conflict, not
   * an error. Anything else (the store unreachable) is logged and counted; the next pass retries.
   */
  async #attempt(kind: string, id: string, write: () => Promise<ItemOutcome>): Promise<ItemOutcome> {
    try {
      return await write();
    } catch (err) {
      if (isSuperseded(err)) return 'conflict';
      this.#logger.warn({ kind, id, err: describeError(err) }, 'convergence item failed');
      return 'error';
    }
  }

  #stopRepeatMs(): number {
    const { config } = this.#options;
    return config.stopRepeatMs ?? config.unclaimedStartTimeoutMs;
  }

  #forgetOldStops(nowMs: number): void {
    const window = this.#stopRepeatMs();
    for (const [guid, at] of this.#stopsAsked) if (nowMs - at >= window) this.#stopsAsked.delete(guid);
  }
}

function taskStartRequest(task: Task): TaskStartRequest {
  return {
    task_guid: task.task_guid,
    domain: task.domain,
    memory_mb: task.memory_mb,
    disk_mb: task.disk_mb,
    placement_tags: task.placement_tags,
  };
}
