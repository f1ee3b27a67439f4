import { randomUUID } from 'node:crypto';
import {
  type BbsStore,
  type CellCapacity,
  type CellPacing,
  type CellPass,
  cellPlacementTag,
  heartbeatsPerTtl,
} from '../bbs/index.js';
import { isNotFound, runLoop } from '../core/index.js';
import type { CellExecutor } from '../executor/index.js';
import { type CrashPolicy, defaultCrashPolicy } from './crash-policy.js';
import { runEvacuation } from './evacuation.js';
import { KnownRecords } from './known-records.js';
import { actualFor, actualRef, applyLRPActions } from './lrp-actions.js';
import { type ReservedLRP, startReserved } from './lrp-start.js';
import { reconcileLRP } from './reconcile-table.js';
import type { RelationSync } from './relation-sync.js';
import type { RepLRPWork, RepState, RepStopRequest, RepTaskWork, RepWork, RepWorkResult } from './rep-api.js';
import type { RepContext, TaskOutputUploader } from './rep-context.js';
import { reconcileLostTask, reconcileTaskContainer } from './rep-tasks.js';
import { StartWrites } from './start-writes.js';

export interface RepOptions {
  readonly bbs: BbsStore;
  readonly executor: CellExecutor;
  readonly cellId: string;
  readonly zone: string;
  /** The URL the auctioneer reaches this rep's API on; registered in the presence record. */
  readonly repUrl: string;
  /** The token this rep's API demands (`rep-server.ts`); registered in the presence record. */
  readonly repToken?: string;
  readonly placementTags?: readonly string[];
  /** Keeps relation files current in LRP containers (systems); absent = containers get none. */
  readonly relations?: RelationSync;
  /** Tags the cell accepts without requiring them (Diego's optional placement tags). */
  readonly optionalPlacementTags?: readonly string[];
  /** The cell runs the model's unit and machine agents; its presence says so (`model_agent`). */
  readonly modelAgent?: boolean;
  readonly pollIntervalMs?: number;
  readonly presenceTtlMs?: number;
  readonly evacuationTimeoutMs?: number;
  readonly crashPolicy?: CrashPolicy;
  /** Where the outputs of this cell's tasks are uploaded (the server's TaskOutputClient). */
  readonly taskOutputs?: TaskOutputUploader;
  readonly now?: () => Date;
  readonly log?: (message: string) => void;
}

/** A background loop of the rep, stopped by aborting it; `done` settles after its last round. */
interface RepLoop {
  readonly controller: AbortController;
  readonly done: Promise<void>;
}

/**
 * The rep of seed 002: represents this cell's containers to the BBS. Work arrives from the
 * auctioneer (reserve, then CAS the record, then run); events and polling both feed one
 * reconcile function per container (the seed's table, `reconcile-table.ts`), applied with CAS
 * (`lrp-actions.ts`, `rep-tasks.ts`). Losing a CAS means someone else moved the record: the next
 * pass sees the new state. Evacuation is planned in `evacuation-plan.ts`, applied in `evacuation.ts`.
 */
export class Rep {
  readonly #options: RepOptions;
  readonly #ctx: RepContext;
  #heartbeats: RepLoop | undefined;
  /** Heartbeats sent and not answered yet: evacuation waits for them before removing the presence. */
  readonly #beats = new Set<Promise<void>>();
  #polls: RepLoop | undefined;
  /**
   * What the server's last heartbeat answer granted (src/bbs/cell-pacing.ts): the presence's TTL,
   * which sets the heartbeat interval, and the shortest pause between safety-net passes. Until
   * the first answer, what this cell asked for.
   */
  #pacing: CellPacing | undefined;
  #evacuating = false;
  #evacuationDone: Promise<void> | undefined;
  readonly #evacuatedListeners: (() => void)[] = [];
  /**
   * Containers whose instance this cell's evacuation moved to `/evacuating`: only the evacuation's
   * rules govern them (docs/cluster-logic.md). The reconcile table would see a RUNNING container of
   * an UNCLAIMED (or CLAIMED by O, or CRASHED) instance and take the instance back to RUNNING here;
   * the evacuation would then count it replaced and stop the container, leaving a RUNNING record
   * on a cell that runs nothing and is about to leave.
   */
  readonly #handedOver = new Set<string>();
  #passRunning: Promise<void> | undefined;
  readonly #inFlight = new Map<string, Promise<void>>();
  /** Each LRP container's record as this rep last claimed, wrote or listed it. */
  readonly #known: KnownRecords;
  /**
   * The lists of the last pass that took no stop, with their digest: sent back, it lets the BBS
   * answer "unchanged" instead of the lists when none of the cell's records moved since.
   */
  #lastLists: Pick<CellPass, 'actual_lrps' | 'tasks' | 'digest'> | undefined;

  constructor(options: RepOptions) {
    this.#options = options;
    this.#known = new KnownRecords(options.cellId);
    const now = options.now ?? (() => new Date());
    this.#ctx = {
      bbs: options.bbs,
      executor: options.executor,
      cellId: options.cellId,
      policy: options.crashPolicy ?? defaultCrashPolicy,
      starts: new StartWrites(options.bbs),
      now,
      log: options.log ?? (() => {}),
      ...(options.taskOutputs ? { taskOutputs: options.taskOutputs } : {}),
    };
  }

  get cellId(): string {
    return this.#options.cellId;
  }

  get isEvacuating(): boolean {
    return this.#evacuating;
  }

  async start(): Promise<void> {
    const { executor } = this.#options;
    executor.on('container', (c) => {
      void this.reconcileContainer(c.guid).catch((err) =>
        this.#ctx.log(`reconcile ${c.guid}: ${String(err)}`),
      );
    });
    await this.#heartbeat();
    this.#heartbeats = startLoop((signal) =>
      runLoop({
        name: 'heartbeat',
        signal,
        intervalMs: () => this.heartbeatIntervalMs(),
        firstRoundInMs: this.heartbeatIntervalMs(),
        // A heartbeat goes every interval even while the last is unanswered (a slow BBS): the
        // presence TTL counts from the last one that lands, so they must keep landing at this rate.
        round: async () => this.#beat(),
      }),
    );
    // poll() never throws (a failed pass is logged), and the first round is the pass awaited here.
    this.#polls = startLoop((signal) =>
      runLoop({
        name: 'poll',
        signal,
        intervalMs: () => this.pollIntervalMs(),
        fixedRate: true,
        round: () => this.poll(),
      }),
    );
    await this.poll();
  }

  stop(): void {
    this.#heartbeats?.controller.abort();
    this.#polls?.controller.abort();
  }

  #presenceTtlMs(): number {
    return this.#options.presenceTtlMs ?? 30_000;
  }

  /** A third of the presence's TTL as the server granted it: two heartbeats may be lost. */
  heartbeatIntervalMs(): number {
    return Math.max(200, (this.#pacing?.ttl_ms ?? this.#presenceTtlMs()) / heartbeatsPerTtl);
  }

  /** The pause between safety-net passes: this cell's own, or longer when the server asks. */
  pollIntervalMs(): number {
    return Math.max(this.#options.pollIntervalMs ?? 5_000, this.#pacing?.min_poll_interval_ms ?? 0);
  }

  /** Sends one heartbeat without waiting for it; a failure is logged, the next one is on its way. */
  #beat(): void {
    const beat = this.#heartbeat().catch((err: unknown) => this.#ctx.log(`heartbeat: ${String(err)}`));
    this.#beats.add(beat);
    void beat.finally(() => this.#beats.delete(beat));
  }

  async #heartbeat(): Promise<void> {
    const o = this.#options;
    const granted = await o.bbs.heartbeatCell({
      presence: {
        cell_id: o.cellId,
        zone: o.zone,
        capacity: o.executor.capacity,
        rep_url: o.repUrl,
        ...(o.repToken !== undefined ? { rep_token: o.repToken } : {}),
        placement_tags: o.placementTags ?? [],
        ...(o.modelAgent ? { model_agent: true } : {}),
      },
      ttl_ms: this.#presenceTtlMs(),
    });
    // A server of a berth before pacing answers the presence alone: the cell keeps its own rates.
    if (typeof granted.ttl_ms === 'number') {
      this.#pacing = { ttl_ms: granted.ttl_ms, min_poll_interval_ms: granted.min_poll_interval_ms ?? 0 };
    }
  }

  state(): RepState {
    const o = this.#options;
    const lrps: Record<string, number> = {};
    for (const c of o.executor.list()) {
      if (c.tags.kind === 'lrp') lrps[c.tags.process_guid] = (lrps[c.tags.process_guid] ?? 0) + 1;
    }
    return {
      cell_id: o.cellId,
      zone: o.zone,
      capacity: o.executor.capacity as CellCapacity,
      used: o.executor.used(),
      lrps,
      evacuating: this.#evacuating,
      placement_tags: o.placementTags ?? [],
      optional_placement_tags: [cellPlacementTag(o.cellId), ...(o.optionalPlacementTags ?? [])],
    };
  }

  /** Reserves what fits and starts it in the background; the rest goes back to the auctioneer. */
  async perform(work: RepWork): Promise<RepWorkResult> {
    const failedLrps: RepLRPWork[] = [];
    const failedTasks: RepTaskWork[] = [];
    const reserved: ReservedLRP[] = [];
    for (const lrp of work.lrps) {
      const instanceGuid = randomUUID();
      const tags = {
        kind: 'lrp' as const,
        ...actualRef(lrp),
        instance_guid: instanceGuid,
        domain: lrp.domain,
      };
      if (this.#reserve(instanceGuid, tags, lrp)) reserved.push({ guid: instanceGuid, lrp });
      else failedLrps.push(lrp);
    }
    startReserved(this.#ctx, this.#known, this.#options.relations, reserved);
    for (const task of work.tasks) {
      if (
        !this.#reserve(task.task_guid, { kind: 'task', task_guid: task.task_guid, domain: task.domain }, task)
      ) {
        failedTasks.push(task);
        continue;
      }
      // Through the per-container chain, so a poll never starts the same task beside it.
      void this.reconcileContainer(task.task_guid).catch((err) =>
        this.#ctx.log(`task ${task.task_guid}: ${String(err)}`),
      );
    }
    return { failed_lrps: failedLrps, failed_tasks: failedTasks };
  }

  /** Reserves a container for work; false when the cell is evacuating or the work does not fit. */
  #reserve(
    guid: string,
    tags: Parameters<CellExecutor['reserve']>[1],
    work: { readonly memory_mb: number; readonly disk_mb: number },
  ): boolean {
    if (this.#evacuating) return false;
    try {
      this.#options.executor.reserve(guid, tags, { memory_mb: work.memory_mb, disk_mb: work.disk_mb });
      return true;
    } catch (err) {
      // The refusal goes back to the auctioneer, which offers the work to another cell.
      this.#ctx.log(`reserve ${guid}: ${err instanceof Error ? err.message : String(err)}`);
      return false;
    }
  }

  /** A stop the BBS asked for: stop the container; reconciliation then CADs the record. */
  async stopInstance(req: RepStopRequest): Promise<void> {
    const container = this.#options.executor.get(req.instance_guid);
    if (!container) return;
    // The BBS asked for the stop because the record changed: what this rep last wrote is old.
    this.#known.forget(req.instance_guid);
    await this.#options.executor.stopContainer(req.instance_guid);
    await this.reconcileContainer(req.instance_guid);
  }

  /** One polling pass: stop requests, then every container and every record of this cell. */
  async poll(): Promise<void> {
    if (this.#passRunning) return this.#passRunning;
    this.#passRunning = this.#pollOnce().finally(() => {
      this.#passRunning = undefined;
    });
    return this.#passRunning;
  }

  async #pollOnce(): Promise<void> {
    const { bbs, executor, cellId } = this.#options;
    try {
      // One request: the stop requests taken, then this cell's records and tasks. BBS first, then
      // containers: a container that appears in between is seen as a container, never as a "No
      // Container" row for a record this cell just claimed.
      const known = this.#lastLists;
      const pass = await bbs.cellPass({
        cell_id: cellId,
        stop_limit: 100,
        visibility_ms: 30_000,
        ...(known?.digest ? { known_digest: known.digest } : {}),
      });
      const { stops } = pass;
      if (pass.unchanged && !known) {
        this.#lastLists = undefined;
        throw new Error('the BBS answered "unchanged" to a pass that sent no digest');
      }
      const lists = pass.unchanged && known ? known : pass;
      // Lists re-read after stops have no digest: the next pass asks for them whole.
      this.#lastLists = stops.length === 0 ? lists : undefined;
      // Stops run side by side: each may wait out its app's graceful-stop timeout.
      await Promise.all(
        stops.map((stop) =>
          stop.kind === 'lrp' ? this.stopInstance(stop.request) : this.#stopTask(stop.request.process_guid),
        ),
      );
      if (stops.length > 0) await bbs.ackStopRequests({ ids: stops.map((s) => s.id) });
      // Stopping may have taken a graceful-stop timeout, and moved records: after stops, the
      // lists are read again (rare; a pass with nothing to stop stays one request).
      const mine = stops.length > 0 ? await bbs.listActualLRPs({ cell_id: cellId }) : lists.actual_lrps;
      const tasks = stops.length > 0 ? await bbs.listTasks({ cell_id: cellId }) : lists.tasks;
      // The records this cell holds, by instance: a container reconciles against its own record
      // from this one list instead of reading it again (a read per container per pass was most of
      // an idle cluster's requests). A container whose record is not here (given back, claimed
      // elsewhere, evacuating) reads it fresh.
      const listed = new Map(
        mine.filter((a) => !a.evacuating && a.cell_id === cellId).map((a) => [a.instance_guid, a]),
      );
      const seen = new Set<string>();
      // Copies of containers deleted since (their reconcile no longer runs) go.
      this.#known.keepOnly((guid) => executor.get(guid) !== undefined);
      for (const c of executor.list()) {
        if (c.tags.kind === 'lrp') {
          seen.add(c.tags.instance_guid);
          this.#known.listed(c.guid, listed.get(c.tags.instance_guid), this.#inFlight.has(c.guid));
          await this.reconcileContainer(c.guid);
        } else if (!this.#inFlight.has(c.guid)) {
          // A task reconcile in flight (its start, run by `perform`) would race this one for the
          // PENDING → RUNNING CAS, and the loser deletes the container: the next pass looks again.
          await this.reconcileContainer(c.guid);
        }
      }
      for (const actual of mine) {
        if (actual.evacuating || seen.has(actual.instance_guid)) continue;
        if (executor.get(actual.instance_guid)) continue;
        const plan = reconcileLRP({
          container: null,
          actual,
          cellId,
          now: this.#ctx.now(),
          policy: this.#ctx.policy,
        });
        await applyLRPActions(this.#ctx, plan, null);
      }
      for (const task of tasks) {
        if (task.state !== 'RUNNING' || executor.get(task.task_guid)) continue;
        await reconcileLostTask(this.#ctx, task);
      }
    } catch (err) {
      // The next pass asks for the lists whole.
      this.#lastLists = undefined;
      this.#ctx.log(`poll: ${String(err)}`);
    }
  }

  /** A task's stop request: its container (named by the task guid) stops; one already gone is no error. */
  async #stopTask(taskGuid: string): Promise<void> {
    try {
      await this.#options.executor.stopContainer(taskGuid);
    } catch (err) {
      if (isNotFound(err)) return;
      this.#ctx.log(`stop task ${taskGuid}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  /**
   * Reconciles one container with its ActualLRP or Task (events and polling both come here). Calls for
   * one container run one after another, so an event and a poll never act on the same stale view.
   */
  reconcileContainer(guid: string): Promise<void> {
    const previous = this.#inFlight.get(guid);
    const next = (previous ?? Promise.resolve()).then(() => this.#reconcileContainerNow(guid));
    // catch-all: the caller of `next` sees its failure; the chain only orders the calls.
    const settled = next.catch(() => {});
    this.#inFlight.set(guid, settled);
    void settled.then(() => {
      if (this.#inFlight.get(guid) === settled) this.#inFlight.delete(guid);
    });
    return next;
  }

  /**
   * The reconcile table's row for one container, applied, against the record this rep last wrote
   * or listed when that is the container's own (`KnownRecords`), else one read fresh.
   */
  async #reconcileContainerNow(guid: string): Promise<void> {
    const { executor, cellId } = this.#options;
    const container = executor.get(guid);
    if (!container) {
      this.#known.forget(guid);
      return;
    }
    if (container.tags.kind === 'task') return reconcileTaskContainer(this.#ctx, guid);
    const actual = this.#known.for(container) ?? (await actualFor(this.#ctx, container));
    const fresh = executor.get(guid);
    // Checked after the read: the evacuation marks a container before it moves its instance.
    if (!fresh || this.#handedOver.has(guid)) return;
    const plan = reconcileLRP({
      container: fresh,
      actual,
      cellId,
      now: this.#ctx.now(),
      policy: this.#ctx.policy,
    });
    const outcome = await applyLRPActions(this.#ctx, plan, fresh);
    // A lost write forgets the copy (the next reconcile reads); no write keeps the record used.
    const after = outcome.lost ? null : outcome.written === undefined ? actual : outcome.written;
    this.#known.wrote(container, executor.get(guid) ? after : null);
  }

  /**
   * Seed "Evacuation": refuse new work, destroy containers not yet RUNNING (their instances are
   * unclaimed and restarted elsewhere), move RUNNING instances to /evacuating with a start
   * request, keep them until the replacement runs, then exit (or at the timeout).
   */
  evacuate(): Promise<void> {
    if (this.#evacuationDone) return this.#evacuationDone;
    this.#evacuating = true;
    // Operators (and tests) read this line as the moment the cell stopped taking work.
    this.#ctx.log('evacuating: new work is refused from now on');
    this.#evacuationDone = this.#evacuate().finally(() => {
      for (const listener of this.#evacuatedListeners) listener();
    });
    return this.#evacuationDone;
  }

  /** Called once evacuation finished (however it was started: API, drain, signal). */
  onEvacuated(listener: () => void): void {
    this.#evacuatedListeners.push(listener);
  }

  async #evacuate(): Promise<void> {
    await runEvacuation(this.#ctx, {
      timeoutMs: this.#options.evacuationTimeoutMs ?? 10 * 60_000,
      passIntervalMs: Math.min(500, this.#options.pollIntervalMs ?? 500),
      moved: this.#handedOver,
    });
    // No heartbeat may put the presence back after it is removed.
    this.#heartbeats?.controller.abort();
    await this.#heartbeats?.done;
    await Promise.all(this.#beats);
    await this.#options.bbs
      .removeCell({ cell_id: this.#options.cellId })
      // Left in place, the presence expires after its TTL: the cell is gone either way.
      .catch((err: unknown) => this.#ctx.log(`remove cell presence: ${String(err)}`));
  }
}

function startLoop(run: (signal: AbortSignal) => Promise<void>): RepLoop {
  const controller = new AbortController();
  return { controller, done: run(controller.signal) };
}
