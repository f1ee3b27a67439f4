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
  type ServiceLogger,
  supersededCodes,
} from '../core/index.js';
import type { RepApi } from '../rep/index.js';
import type { ConvergencePlan, LRPConvergenceItem, TaskConvergenceItem } from './convergence-plan.js';

export type ConvergenceItemKind = LRPConvergenceItem['kind'] | TaskConvergenceItem['kind'];

/** What applying one plan did. `conflict`: someone else moved the record first; the next pass re-plans. */
export interface ConvergenceCounts {
  readonly planned: Readonly<Partial<Record<ConvergenceItemKind, number>>>;
  readonly applied: number;
  readonly conflicts: number;
  /** Items not applied on purpose (a stop already asked for recently, a pass aborted). */
  readonly skipped: number;
  readonly errors: number;
}

/** The records a plan was made from: the applier needs their tags and owners. */
export interface PlannedRecords {
  readonly actuals: readonly ConvergenceActualLRP[];
  readonly cells: readonly CellPresence[];
  readonly tasks: readonly Task[];
}

export interface ConvergenceApplierOptions {
  readonly bbs: BbsStore;
  readonly logger: ServiceLogger;
  /** Plan items applied at once (default 8); each is one BBS transaction. */
  readonly concurrency?: number;
  /** A stop for one instance is not asked again for this long. */
  readonly stopRepeatMs: number;
  readonly repClientFor?: (cell: CellPresence) => Pick<RepApi, 'stop'>;
  readonly requestTaskAuctions?: (tasks: readonly TaskStartRequest[]) => void | Promise<void>;
}

type TaskWriteItem = Exclude<TaskConvergenceItem, { kind: 'kick-task' }>;
/** The plan items that are one unclaim each (and so one start request): applied in batches. */
type UnclaimItem = Extract<
  LRPConvergenceItem,
  { kind: 'unclaim-and-start' | 'restart-crashed' | 're-emit-start' }
>;
type OtherLRPItem = Exclude<LRPConvergenceItem, UnclaimItem>;
type ItemOutcome = 'applied' | 'conflict' | 'skipped' | 'error';

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

/**
 * Applies a convergence plan: every item with the BBS operation that does it, under a CAS on the
 * tag the plan was made from. A lost CAS (or a record already gone or moved on) is a conflict, not
 * an error: someone else acted first, and the next pass plans from fresh state.
 *
 * Starts are never sent from here: `createActualLRP` and `unclaimActualLRPs` write the start
 * request into the BBS outbox in the same transaction. Stops of CLAIMED/RUNNING instances go
 * through `retireActualLRP`, which writes a stop request for the owning cell's rep; UNCLAIMED and
 * CRASHED instances, and any on a vanished cell, are compare-and-deleted.
 */
export class ConvergenceApplier {
  readonly #options: ConvergenceApplierOptions;
  /** instance_guid → when its stop was last asked, so a slow rep is not flooded with repeats. */
  readonly #stopsAsked = new Map<string, number>();

  constructor(options: ConvergenceApplierOptions) {
    this.#options = options;
  }

  async apply(
    plan: ConvergencePlan,
    records: PlannedRecords,
    now: Date,
    signal: AbortSignal,
  ): Promise<ConvergenceCounts> {
    // Indexed only when there is something to apply: a healthy cluster's pass is the read and plan.
    const instances = new Map<string, ConvergenceActualLRP>();
    const evacuating = new Map<string, ConvergenceActualLRP>();
    if (plan.lrps.length > 0)
      for (const a of records.actuals) (a.evacuating ? evacuating : instances).set(actualLrpKey(a), a);
    const cells = new Map(records.cells.map((c) => [c.cell_id, c]));
    const tasksByGuid = new Map(records.tasks.map((t) => [t.task_guid, t]));

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
    const concurrency = this.#options.concurrency ?? 8;
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
          this.#options.logger.warn({ err: describeError(err), tasks: kicks.length }, 'kicking tasks failed');
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
    };
  }

  /**
   * Every unclaim of the plan, in batches of one transaction each: an instance on a vanished cell
   * or crashed and due a restart goes back to UNCLAIMED, and one UNCLAIMED too long is re-emitted
   * (UNCLAIMED → UNCLAIMED, a new `since`). The BBS writes each one's start request in the same
   * transaction. Each item's answer is its own: a lost CAS is a conflict, as for single writes.
   */
  async #applyUnclaims(
    items: readonly UnclaimItem[],
    instances: ReadonlyMap<string, ConvergenceActualLRP>,
    signal: AbortSignal,
  ): Promise<ItemOutcome[]> {
    const { bbs, logger } = this.#options;
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
        const { results } = await bbs.unclaimActualLRPs({ unclaims: batch });
        results.forEach((result, i) => {
          if ('actual_lrp' in result) outcomes.push('applied');
          else if (supersededCodes.has(result.error.code)) outcomes.push('conflict');
          else {
            const id = batch[i] ? actualLrpKey(batch[i]) : '';
            logger.warn({ kind: 'unclaim', id, err: result.error }, 'convergence item failed');
            outcomes.push('error');
          }
        });
      } catch (err) {
        logger.warn(
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
          if (askedAt !== undefined && now.getTime() - askedAt < this.#options.stopRepeatMs) return 'skipped';
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
      this.#options.logger.warn({ kind, id, err: describeError(err) }, 'convergence item failed');
      return 'error';
    }
  }

  #forgetOldStops(nowMs: number): void {
    const window = this.#options.stopRepeatMs;
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
