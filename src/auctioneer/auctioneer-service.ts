import type { BbsStore, CellPresence, LRPStartRequest, TaskStartRequest } from '../bbs/index.js';
import {
  describeError,
  forEachLimited,
  isNotFound,
  isSuperseded,
  LocalLoop,
  runLoop,
  type ServiceLogger,
  type SingletonContext,
  silentLogger,
  Wakeup,
} from '../core/index.js';
import type { RepApi, RepLRPWork, RepTaskWork, RepWork } from '../rep/index.js';
import {
  auction,
  type CellState,
  type LRPAuctionWork,
  lrpWorkFromStartRequest,
  type TaskAuctionWork,
} from './auction.js';
import {
  type AuctionBatchReport,
  type AuctionRound,
  emptyRound,
  performFigures,
} from './auction-batch-report.js';
import { AuctionPool, type Delivery, type PoolEntry } from './auction-pool.js';
import {
  keysOf,
  lrpKey,
  repLRPWork,
  repTaskWork,
  taskAuctionWork,
  taskKey,
  workKey,
} from './auction-work-keys.js';
import { roomEvents, startRequestEvents } from './auctioneer-events.js';
import { CellStateCache } from './cell-state-cache.js';

export interface AuctioneerConfig {
  /** The availability zones in PreferredZone order; default: the distinct zones of live cells, sorted. */
  readonly zones?: readonly string[];
  /** Time between batches while there is nothing more to take. */
  readonly batchIntervalMs: number;
  /**
   * Start requests taken from each outbox per batch (default: 1,000, or 10 per live cell when
   * that is more, so that a batch spread over many cells still hands each several instances, and
   * a cell's claim, start and perform requests each carry several).
   */
  readonly batchSize?: number;
  /**
   * How long a taken request stays hidden from other takers (default 30 s). An auctioneer that dies
   * mid-batch leaves its requests to come back after this.
   */
  readonly visibilityMs?: number;
  /** Batches a refused or unplaceable piece of work is retried in memory before it is dropped (default 10). */
  readonly retryBatches?: number;
  /**
   * How long work that only lacks room now (it fits an empty cell it may use) waits in memory,
   * whatever the number of batches, before it is dropped (default: `visibilityMs`, so a task's
   * request comes back from the outbox about when it is dropped).
   */
  readonly roomWaitMs?: number;
  /** Cell state fetches and work submissions in flight at once (default 32). */
  readonly concurrency?: number;
  readonly colocationWeight?: number;
  /**
   * How long a cell's state, with the work it accepted since added, serves the next batches as it
   * is; older, it still serves and is read again beside the batch (default 5 minutes, a safety net:
   * states are dropped whenever room may have come, see `CellStateCache`).
   */
  readonly cellStateMaxAgeMs?: number;
}

export interface AuctioneerServiceOptions {
  readonly bbs: BbsStore;
  /** The rep of a live cell; usually `(cell) => repClientForCell(cell)`. */
  repClientFor(cell: CellPresence): Pick<RepApi, 'state' | 'perform'>;
  readonly config: AuctioneerConfig;
  readonly now?: () => Date;
  readonly logger?: ServiceLogger;
  /**
   * In-process news of committed BBS events by type (`SqlBbsStore.onEvents`): new work starts a
   * batch at once instead of after `batchIntervalMs`, which stays as the safety net (a start
   * request written by another server, a cell that came back).
   */
  readonly onStoreEvents?: (listener: (types: readonly string[]) => void) => () => void;
}

/**
 * After this long a kept cell state is stale even if nothing said room may have come (an
 * instance's container that ended with no event this server saw): still used, and read again
 * beside the batch that used it. Read before the batch, it was what a lost cell's replacement
 * waited for: after a quiet minute, an auction of a hundred instances asked all 950 live cells
 * for their state first (3.3 s; docs/performance.md, round 17).
 */
const defaultCellStateMaxAgeMs = 5 * 60_000;

/**
 * Woken batches start at least this far apart, so a storm of events still batches its work: each
 * batch costs two outbox transactions and a state call to every cell. An idle cluster's first
 * wake-up runs at once (the gap counts from the previous batch's start).
 */
const minBatchGapMs = 20;

/**
 * The auctioneer as a running service (seed 002 "Distributing ActualLRPs", issue 4): takes start
 * requests from the BBS outboxes, fetches every live cell's state from its rep, runs the pure
 * `auction`, and submits each cell's share with `perform`. The only BBS writes are outbox acks and
 * placement errors on still-UNCLAIMED ActualLRPs (Diego's FailActualLRP); states belong to reps.
 *
 * Work that a rep refuses, that cannot be placed, or whose cell cannot be reached stays in an
 * in-memory pool and joins the next batch. An LRP request is acknowledged once its work is placed
 * or its placement error recorded (the converger re-emits UNCLAIMED instances after its timeout,
 * which covers an auctioneer that dies with work in memory); a task request only once placed,
 * since a task has nowhere to record the error: the outbox hands it back after `visibilityMs`,
 * until the converger fails it at the pending limit.
 *
 * A Singleton by shape (`name`, `run`): run it under a lease so one server auctions at a time.
 */
export class AuctioneerService {
  readonly name = 'auctioneer';
  readonly #options: AuctioneerServiceOptions;
  readonly #logger: ServiceLogger;
  readonly #now: () => Date;
  readonly #cellStates: CellStateCache;
  /** Live cells at the last auction (the default batch size follows them). */
  #liveCells = 0;
  readonly #pool: AuctionPool;
  #serial: Promise<unknown> = Promise.resolve();
  readonly #loop = new LocalLoop();
  readonly #wakeup = new Wakeup();

  constructor(options: AuctioneerServiceOptions) {
    this.#options = options;
    this.#logger = options.logger ?? silentLogger;
    this.#pool = new AuctionPool(options.config.retryBatches ?? 10);
    this.#now = options.now ?? (() => new Date());
    this.#cellStates = new CellStateCache(options.config.cellStateMaxAgeMs ?? defaultCellStateMaxAgeMs, () =>
      this.#now().getTime(),
    );
  }

  /** Work waiting in memory for the next batch. */
  get pending(): number {
    return this.#pool.size;
  }

  /**
   * Adds work without an outbox row, for a caller in the same process (the converger's task kick,
   * Diego's RequestTaskAuctions). Already pooled work is not duplicated.
   */
  requestAuctions(req: {
    readonly lrps?: readonly LRPStartRequest[];
    readonly tasks?: readonly TaskStartRequest[];
  }): void {
    for (const start of req.lrps ?? [])
      for (const w of lrpWorkFromStartRequest(start)) this.#pool.add(w, undefined);
    for (const task of req.tasks ?? []) this.#pool.add(taskAuctionWork(task), undefined);
    if ((req.lrps?.length ?? 0) + (req.tasks?.length ?? 0) > 0) this.#wakeup.wake();
  }

  /** One batch, now. Batches never overlap: a call while one runs waits for it. */
  runOnce(signal: AbortSignal = new AbortController().signal): Promise<AuctionBatchReport> {
    const result = this.#serial.then(() => this.#batch(signal));
    // catch-all: the caller of runOnce gets the failure; the chain only keeps batches in order.
    this.#serial = result.catch(() => {});
    return result;
  }

  /**
   * Starts the next batch at once (or right after the one running: what arrives during a batch
   * waits for the next, which takes it all). The converger's task kick and the store's events call it.
   */
  wake(): void {
    this.#wakeup.wake();
  }

  /**
   * Batches until `signal` aborts: woken by new work, else every `batchIntervalMs`; errors are
   * logged and retried with back-off.
   */
  async run(context: Pick<SingletonContext, 'signal'>): Promise<void> {
    const { batchIntervalMs } = this.#options.config;
    // Kept states are only right while this auctioneer alone gave the cells work: one that held
    // the lease before, lost it and has it again does not know what its successor placed.
    this.#cellStates.clear();
    const unsubscribe = this.#options.onStoreEvents?.((types) => {
      const room = types.some((t) => roomEvents.has(t));
      if (room) this.#cellStates.clear();
      if ((room && this.#pool.size > 0) || types.some((t) => startRequestEvents.has(t))) this.#wakeup.wake();
    });
    try {
      await runLoop({
        name: 'auction batch',
        signal: context.signal,
        intervalMs: batchIntervalMs,
        wakeup: this.#wakeup,
        minGapMs: Math.min(minBatchGapMs, batchIntervalMs),
        backoff: { initialMs: 250, capMs: Math.max(batchIntervalMs, 250) },
        logger: this.#logger,
        round: async (signal) => {
          const report = await this.runOnce(signal);
          if (report.auctioned > 0) this.#logger.info({ ...report }, 'auction batch');
          // A full take means more is waiting: go again without the pause.
          return report.taken >= this.#batchSize() ? { nextInMs: 0 } : undefined;
        },
      });
    } finally {
      unsubscribe?.();
    }
  }

  /** Runs the batch loop without a lease (a single-server setup or a test). */
  start(): void {
    this.#loop.start((context) => this.run(context));
  }

  stop(): Promise<void> {
    return this.#loop.stop();
  }

  /** How long work may wait in the pool for room (see AuctionPool.waitForRoom). */
  #roomWaitMs(): number {
    return this.#options.config.roomWaitMs ?? this.#options.config.visibilityMs ?? 30_000;
  }

  /** The batch size: the configured one, or the default for the cells the last batch saw. */
  #batchSize(): number {
    return this.#options.config.batchSize ?? Math.max(1_000, 10 * this.#liveCells);
  }

  async #batch(signal: AbortSignal): Promise<AuctionBatchReport> {
    const started = this.#now().getTime();
    const { bbs, config } = this.#options;
    if (signal.aborted) return this.#report(0, 0, emptyRound, started);
    const batchSize = this.#batchSize();
    const visibility = config.visibilityMs ?? 30_000;
    // A pool holding a batch's worth of work (waiting for room, mostly) takes no more: the outbox
    // is the queue, and an auction over all of it would cost each batch more and more.
    const [lrpDeliveries, taskDeliveries] =
      this.#pool.size >= batchSize
        ? [[], []]
        : await Promise.all([
            bbs.takeStartRequests({ limit: batchSize, visibility_ms: visibility }),
            bbs.takeTaskStartRequests({ limit: batchSize, visibility_ms: visibility }),
          ]);
    let taken = 0;
    for (const d of lrpDeliveries) {
      const works = lrpWorkFromStartRequest(d.request);
      taken += works.length;
      const delivery: Delivery = { kind: 'lrp', ids: d.ids, pending: new Set(works.map(workKey)) };
      for (const w of works) this.#pool.add(w, delivery);
    }
    for (const d of taskDeliveries) {
      taken++;
      const w = taskAuctionWork(d.request);
      this.#pool.add(w, { kind: 'task', ids: [d.id], pending: new Set([workKey(w)]) });
    }
    const entries = this.#pool.entries();
    if (entries.length === 0) return this.#report(taken, 0, emptyRound, started);
    const round = await this.#auction(entries, signal);
    return this.#report(taken, entries.length, round, started);
  }

  async #auction(entries: readonly PoolEntry[], signal: AbortSignal): Promise<AuctionRound> {
    const { bbs, config } = this.#options;
    const concurrency = config.concurrency ?? 32;
    const phaseStarted = this.#now().getTime();
    const cells = await bbs.listCells();
    this.#liveCells = cells.length;
    this.#cellStates.keepOnly(new Set(cells.map((c) => c.cell_id)));
    const states: CellState[] = [];
    const stale: { readonly cell: CellPresence; readonly version: number }[] = [];
    let unreachableCells = 0;
    let statesRead = 0;
    await forEachLimited(cells, concurrency, async (cell) => {
      const kept = this.#cellStates.kept(cell);
      if (kept) {
        states.push(kept.state);
        if (kept.stale) stale.push({ cell, version: kept.version });
        return;
      }
      statesRead++;
      try {
        const state = await this.#readState(cell);
        this.#cellStates.remember(cell, state);
        states.push(state);
      } catch (err) {
        // Skipped this round only: its presence is still live, so it may answer next time.
        this.#cellStates.forget(cell.cell_id);
        unreachableCells++;
        this.#logger.warn({ cell_id: cell.cell_id, err: describeError(err) }, 'cell state unavailable');
      }
    });
    // PreferredZone depends on the zone count, so take it from every live cell, not only those that
    // answered: one slow cell must not move every instance's preferred zone.
    const statesDone = this.#now().getTime();
    const zones = config.zones ?? [...new Set(cells.map((c) => c.zone))].sort();
    const lrps: LRPAuctionWork[] = [];
    const tasks: TaskAuctionWork[] = [];
    for (const e of entries) {
      if (e.work.kind === 'lrp') lrps.push(e.work);
      else tasks.push(e.work);
    }
    const result = auction({ lrps, tasks }, states, {
      zones,
      ...(config.colocationWeight !== undefined ? { colocationWeight: config.colocationWeight } : {}),
    });
    const auctionDone = this.#now().getTime();
    const timings = { statesRead, statesMs: statesDone - phaseStarted, auctionMs: auctionDone - statesDone };
    if (signal.aborted) return { ...emptyRound, unreachableCells, ...timings };

    const byCell = new Map<string, { lrps: RepLRPWork[]; tasks: RepTaskWork[] }>();
    for (const p of result.placements) {
      let work = byCell.get(p.cell_id);
      if (work === undefined) {
        work = { lrps: [], tasks: [] };
        byCell.set(p.cell_id, work);
      }
      if (p.work.kind === 'lrp') work.lrps.push(repLRPWork(p.work));
      else work.tasks.push(repTaskWork(p.work));
    }
    const placedKeys: string[] = [];
    const retryKeys: string[] = [];
    const cellById = new Map(cells.map((c) => [c.cell_id, c]));
    const performTimes: number[] = [];
    await forEachLimited([...byCell], concurrency, async ([cellId, work]) => {
      const cell = cellById.get(cellId) as CellPresence;
      const submitted: RepWork = work;
      const sent = this.#now().getTime();
      try {
        const answer = await this.#options.repClientFor(cell).perform(submitted);
        performTimes.push(this.#now().getTime() - sent);
        const refused = new Set([
          ...answer.failed_lrps.map((w) => lrpKey(w.process_guid, w.index)),
          ...answer.failed_tasks.map((w) => taskKey(w.task_guid)),
        ]);
        for (const key of keysOf(submitted)) (refused.has(key) ? retryKeys : placedKeys).push(key);
        if (refused.size > 0) {
          // Its state was not what was kept: ask it again next batch.
          this.#cellStates.forget(cellId);
          this.#logger.info({ cell_id: cellId, refused: refused.size }, 'cell refused work');
        } else {
          this.#cellStates.accepted(cellId, submitted);
        }
      } catch (err) {
        this.#cellStates.forget(cellId);
        // Whether the rep took any of it is unknown; offering it again is safe because a rep
        // claims with a CAS and a task runs only after winning PENDING → RUNNING.
        retryKeys.push(...keysOf(submitted));
        this.#logger.warn({ cell_id: cellId, err: describeError(err) }, 'submitting work failed');
      }
    });

    const performMs = this.#now().getTime() - auctionDone;

    const settled: PoolEntry[] = [];
    for (const key of placedKeys) {
      const entry = this.#pool.get(key);
      if (entry) settled.push(entry);
    }
    let placementErrors = 0;
    let dropped = 0;
    for (const failure of result.failures) {
      const entry = this.#pool.get(workKey(failure.work));
      if (!entry) continue;
      if (entry.work.kind === 'lrp' && !signal.aborted) {
        const outcome = await this.#recordPlacementError(entry, failure.reason);
        if (outcome === 'recorded') placementErrors++;
        if (outcome === 'obsolete') {
          settled.push(entry);
          continue;
        }
      }
      const givenUp = failure.waitsForRoom
        ? this.#pool.waitForRoom(entry, this.#now().getTime(), this.#roomWaitMs())
        : this.#pool.retryOrDrop(entry);
      if (givenUp) dropped++;
    }
    for (const key of retryKeys) {
      const entry = this.#pool.get(key);
      if (entry && this.#pool.retryOrDrop(entry)) dropped++;
    }
    // Work the auction could not place may fit room the kept states do not show (containers that
    // ended). Work a cell refused or could not take is not that: that cell's state is forgotten
    // above, and clearing every state for it had the batch after a lost cell's (whose performs
    // met the cells that died but had not lapsed yet) ask all 950 cells again (2.5 s).
    if (result.failures.length > 0) this.#cellStates.clear();
    else this.#cellStates.readAgain(stale, (cell) => this.#readState(cell), concurrency);
    for (const entry of settled) this.#pool.settle(entry);
    await this.#ackSettled();
    return {
      placed: placedKeys.length,
      dropped,
      placementErrors,
      unreachableCells,
      ...timings,
      performMs,
      ...performFigures(byCell.size, performTimes),
    };
  }

  async #readState(cell: CellPresence): Promise<CellState> {
    const s = await this.#options.repClientFor(cell).state();
    return {
      cell_id: cell.cell_id,
      zone: cell.zone,
      capacity: s.capacity,
      used: s.used,
      lrps: s.lrps,
      evacuating: s.evacuating,
      placement_tags: s.placement_tags,
      optional_placement_tags: s.optional_placement_tags,
    };
  }

  /**
   * Writes the auction's reason on the ActualLRP if it is still UNCLAIMED (the only state the
   * auction places). A record that is gone or no longer UNCLAIMED makes the work obsolete.
   */
  async #recordPlacementError(
    entry: PoolEntry,
    reason: string,
  ): Promise<'recorded' | 'unchanged' | 'obsolete' | 'retry'> {
    const w = entry.work as LRPAuctionWork;
    if (entry.recordedError === reason) return 'unchanged';
    const { bbs } = this.#options;
    try {
      const group = await bbs.getActualLRP({ process_guid: w.process_guid, index: w.index });
      const lrp = group.instance;
      if (lrp === null || lrp.state !== 'UNCLAIMED') return 'obsolete';
      if (lrp.placement_error !== reason) {
        await bbs.failActualLRP({
          process_guid: w.process_guid,
          index: w.index,
          expected: lrp.modification_tag,
          placement_error: reason,
        });
      }
      entry.recordedError = reason;
      this.#pool.markSettledForAck(entry);
      return lrp.placement_error !== reason ? 'recorded' : 'unchanged';
    } catch (err) {
      if (isNotFound(err)) return 'obsolete';
      // Someone moved the record between our read and write: decide again next batch.
      if (!isSuperseded(err)) {
        this.#logger.warn({ key: entry.key, err: describeError(err) }, 'recording placement error failed');
      }
      return 'retry';
    }
  }

  async #ackSettled(): Promise<void> {
    const { lrpIds, taskIds } = this.#pool.takeAckable();
    const { bbs } = this.#options;
    // An ack that fails is harmless: the rows come back after the visibility timeout and the
    // work is offered again, which a rep's CAS makes safe.
    await Promise.all([
      lrpIds.length > 0 ? bbs.ackStartRequests({ ids: lrpIds }) : undefined,
      taskIds.length > 0 ? bbs.ackTaskStartRequests({ ids: taskIds }) : undefined,
    ]).catch((err: unknown) =>
      this.#logger.warn({ err: describeError(err) }, 'ack of start requests failed'),
    );
  }

  #report(taken: number, auctioned: number, round: AuctionRound, started: number): AuctionBatchReport {
    return {
      taken,
      auctioned,
      ...round,
      retrying: this.#pool.size,
      durationMs: this.#now().getTime() - started,
    };
  }
}
