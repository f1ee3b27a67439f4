import { randomUUID } from 'node:crypto';
import type { ActualLRP, BbsStore, CellCapacity, DesiredLRP, Task } from '../bbs/index.js';
import { isBerthError } from '../core/index.js';
import type { ContainerRunSpec, Executor, ExecutorContainer } from '../executor/index.js';
import { type CrashPolicy, defaultCrashPolicy } from './crash-policy.js';
import {
  type LRPRepAction,
  reconcileLRP,
  reconcileTask,
  stillDeletesContainer,
  type TaskRepAction,
} from './reconcile-table.js';
import type { RelationSync } from './relation-sync.js';
import {
  cellPlacementTag,
  type RepLRPWork,
  type RepState,
  type RepStopRequest,
  type RepTaskWork,
  type RepWork,
  type RepWorkResult,
} from './rep-api.js';

export interface RepOptions {
  readonly bbs: BbsStore;
  readonly executor: Executor;
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
  readonly now?: () => Date;
  readonly log?: (message: string) => void;
}

type Logger = (message: string) => void;

/**
 * The rep of seed 002: represents this cell's containers to the BBS. Work arrives from the
 * auctioneer (reserve, then CAS the record, then run); events and polling both feed one
 * reconcile function per container (the seed's table, `reconcile-table.ts`), applied with CAS.
 * Losing a CAS means someone else moved the record: the next pass sees the new state.
 */
export class Rep {
  private heartbeatTimer: NodeJS.Timeout | undefined;
  /** The heartbeat in flight, so evacuation can wait for it before removing the presence. */
  private heartbeatRunning: Promise<void> = Promise.resolve();
  private pollTimer: NodeJS.Timeout | undefined;
  private evacuating = false;
  private evacuationDone: Promise<void> | undefined;
  private readonly policy: CrashPolicy;
  private readonly log: Logger;
  private passRunning: Promise<void> | undefined;
  private readonly desiredCache = new Map<string, DesiredLRP>();

  constructor(private readonly options: RepOptions) {
    this.policy = options.crashPolicy ?? defaultCrashPolicy;
    this.log = options.log ?? (() => {});
  }

  private now(): Date {
    return this.options.now?.() ?? new Date();
  }

  get cellId(): string {
    return this.options.cellId;
  }

  get isEvacuating(): boolean {
    return this.evacuating;
  }

  async start(): Promise<void> {
    this.options.executor.on('container', (c) => {
      void this.reconcileContainer(c.guid).catch((err) => this.log(`reconcile ${c.guid}: ${String(err)}`));
    });
    await this.heartbeat();
    const ttl = this.options.presenceTtlMs ?? 30_000;
    this.heartbeatTimer = setInterval(
      () => {
        this.heartbeatRunning = this.heartbeat().catch((err) => this.log(`heartbeat: ${String(err)}`));
      },
      Math.max(200, ttl / 3),
    );
    this.pollTimer = setInterval(() => void this.poll(), this.options.pollIntervalMs ?? 5_000);
    await this.poll();
  }

  stop(): void {
    clearInterval(this.heartbeatTimer);
    clearInterval(this.pollTimer);
  }

  private async heartbeat(): Promise<void> {
    await this.options.bbs.heartbeatCell({
      presence: {
        cell_id: this.options.cellId,
        zone: this.options.zone,
        capacity: this.options.executor.capacity,
        rep_url: this.options.repUrl,
        ...(this.options.repToken !== undefined ? { rep_token: this.options.repToken } : {}),
        placement_tags: this.options.placementTags ?? [],
        ...(this.options.modelAgent ? { model_agent: true } : {}),
      },
      ttl_ms: this.options.presenceTtlMs ?? 30_000,
    });
  }

  state(): RepState {
    const lrps: Record<string, number> = {};
    for (const c of this.options.executor.list()) {
      if (c.tags.kind === 'lrp') lrps[c.tags.process_guid] = (lrps[c.tags.process_guid] ?? 0) + 1;
    }
    const used = this.options.executor.used();
    return {
      cell_id: this.options.cellId,
      zone: this.options.zone,
      capacity: this.options.executor.capacity as CellCapacity,
      used,
      lrps,
      evacuating: this.evacuating,
      placement_tags: this.options.placementTags ?? [],
      optional_placement_tags: [
        cellPlacementTag(this.options.cellId),
        ...(this.options.optionalPlacementTags ?? []),
      ],
    };
  }

  /** Reserves what fits and starts it in the background; the rest goes back to the auctioneer. */
  async perform(work: RepWork): Promise<RepWorkResult> {
    const failedLrps: RepLRPWork[] = [];
    const failedTasks: RepTaskWork[] = [];
    for (const lrp of work.lrps) {
      if (this.evacuating) {
        failedLrps.push(lrp);
        continue;
      }
      const instanceGuid = randomUUID();
      try {
        this.options.executor.reserve(
          instanceGuid,
          {
            kind: 'lrp',
            process_guid: lrp.process_guid,
            index: lrp.index,
            instance_guid: instanceGuid,
            domain: lrp.domain,
          },
          { memory_mb: lrp.memory_mb, disk_mb: lrp.disk_mb },
        );
      } catch {
        failedLrps.push(lrp);
        continue;
      }
      void this.startLRP(instanceGuid, lrp).catch((err) =>
        this.log(`start ${lrp.process_guid}/${lrp.index}: ${String(err)}`),
      );
    }
    for (const task of work.tasks) {
      if (this.evacuating) {
        failedTasks.push(task);
        continue;
      }
      try {
        this.options.executor.reserve(
          task.task_guid,
          { kind: 'task', task_guid: task.task_guid, domain: task.domain },
          {
            memory_mb: task.memory_mb,
            disk_mb: task.disk_mb,
          },
        );
      } catch {
        failedTasks.push(task);
        continue;
      }
      void this.reconcileTaskContainer(task.task_guid).catch((err) =>
        this.log(`task ${task.task_guid}: ${String(err)}`),
      );
    }
    return { failed_lrps: failedLrps, failed_tasks: failedTasks };
  }

  /** Seed: "the Rep creates a container reservation, then CAS the ActualLRP to CLAIMED, then starts running the container". */
  private async startLRP(guid: string, lrp: RepLRPWork): Promise<void> {
    const group = await this.options.bbs
      .getActualLRP({ process_guid: lrp.process_guid, index: lrp.index })
      .catch(() => null);
    const actual = group?.instance ?? null;
    if (actual?.state !== 'UNCLAIMED') {
      await this.options.executor.deleteContainer(guid);
      return;
    }
    try {
      await this.options.bbs.claimActualLRP({
        process_guid: lrp.process_guid,
        index: lrp.index,
        expected: actual.modification_tag,
        instance_key: { instance_guid: guid, cell_id: this.options.cellId },
      });
    } catch (err) {
      await this.options.executor.deleteContainer(guid);
      if (!isBerthError(err)) throw err;
      return;
    }
    const desired = await this.desired(lrp.process_guid);
    if (!desired) {
      await this.options.executor.deleteContainer(guid);
      return;
    }
    await this.options.executor.run(
      guid,
      runSpecOfLRP(desired, await this.options.relations?.startSpec(lrp.process_guid, lrp.index)),
    );
  }

  private async desired(processGuid: string): Promise<DesiredLRP | undefined> {
    const cached = this.desiredCache.get(processGuid);
    if (cached) return cached;
    try {
      const desired = await this.options.bbs.getDesiredLRP({ process_guid: processGuid });
      this.desiredCache.set(processGuid, desired);
      return desired;
    } catch (err) {
      if (isBerthError(err) && err.code === 'not_found') return undefined;
      throw err;
    }
  }

  /** A stop the BBS asked for: stop the container; reconciliation then CADs the record. */
  async stopInstance(req: RepStopRequest): Promise<void> {
    const container = this.options.executor.get(req.instance_guid);
    if (!container) return;
    await this.options.executor.stopContainer(req.instance_guid);
    await this.reconcileContainer(req.instance_guid);
  }

  /** One polling pass: stop requests, then every container and every record of this cell. */
  async poll(): Promise<void> {
    if (this.passRunning) return this.passRunning;
    this.passRunning = this.pollOnce().finally(() => {
      this.passRunning = undefined;
    });
    return this.passRunning;
  }

  private async pollOnce(): Promise<void> {
    try {
      const stops = await this.options.bbs.takeStopRequests({
        cell_id: this.options.cellId,
        limit: 100,
        visibility_ms: 30_000,
      });
      // Stops run side by side: each may wait out its app's graceful-stop timeout.
      await Promise.all(
        stops.map((stop) =>
          stop.kind === 'lrp'
            ? this.stopInstance(stop.request)
            : this.options.executor.stopContainer(stop.request.process_guid).catch(() => undefined),
        ),
      );
      if (stops.length > 0) await this.options.bbs.ackStopRequests({ ids: stops.map((s) => s.id) });
      // BBS first, then containers: a container that appears in between is seen as a container,
      // never as a "No Container" row for a record this cell just claimed.
      const mine = await this.options.bbs.listActualLRPs({ cell_id: this.options.cellId });
      const containers = this.options.executor.list();
      const seen = new Set<string>();
      for (const c of containers) {
        if (c.tags.kind === 'lrp') {
          seen.add(c.tags.instance_guid);
          await this.reconcileContainer(c.guid);
        } else {
          await this.reconcileTaskContainer(c.guid);
        }
      }
      for (const actual of mine) {
        if (actual.evacuating || seen.has(actual.instance_guid)) continue;
        if (this.options.executor.get(actual.instance_guid)) continue;
        await this.applyLRP(
          reconcileLRP({
            container: null,
            actual,
            cellId: this.options.cellId,
            now: this.now(),
            policy: this.policy,
          }),
          null,
        );
      }
      const tasks = await this.options.bbs.listTasks({ cell_id: this.options.cellId });
      for (const task of tasks) {
        if (task.state !== 'RUNNING' || this.options.executor.get(task.task_guid)) continue;
        await this.applyTask(reconcileTask(null, task, this.options.cellId), null);
      }
    } catch (err) {
      this.log(`poll: ${String(err)}`);
    }
  }

  private async actualFor(container: ExecutorContainer): Promise<ActualLRP | null> {
    if (container.tags.kind !== 'lrp') return null;
    const group = await this.options.bbs
      .getActualLRP({ process_guid: container.tags.process_guid, index: container.tags.index })
      .catch((err) => {
        if (isBerthError(err) && err.code === 'not_found') return null;
        throw err;
      });
    return group?.instance ?? null;
  }

  private readonly inFlight = new Map<string, Promise<void>>();

  /**
   * Reconciles one LRP container with its ActualLRP (events and polling both come here). Calls for
   * one container run one after another, so an event and a poll never act on the same stale view.
   */
  reconcileContainer(guid: string): Promise<void> {
    const previous = this.inFlight.get(guid) ?? Promise.resolve();
    const next = previous.then(() => this.reconcileContainerNow(guid));
    const settled = next.catch(() => {});
    this.inFlight.set(guid, settled);
    void settled.then(() => {
      if (this.inFlight.get(guid) === settled) this.inFlight.delete(guid);
    });
    return next;
  }

  private async reconcileContainerNow(guid: string): Promise<void> {
    const container = this.options.executor.get(guid);
    if (!container) return;
    if (container.tags.kind === 'task') return this.reconcileTaskContainer(guid);
    const actual = await this.actualFor(container);
    const fresh = this.options.executor.get(guid);
    if (!fresh) return;
    await this.applyLRP(
      reconcileLRP({
        container: fresh,
        actual,
        cellId: this.options.cellId,
        now: this.now(),
        policy: this.policy,
      }),
      fresh,
    );
  }

  private async applyLRP(
    actions: readonly LRPRepAction[],
    container: ExecutorContainer | null,
  ): Promise<void> {
    const bbs = this.options.bbs;
    for (const action of actions) {
      if (action.kind !== 'none') this.log(`lrp action ${action.kind}`);
      try {
        switch (action.kind) {
          case 'none':
            break;
          case 'claim':
            await bbs.claimActualLRP({
              ...refOf(action.key),
              expected: action.expected,
              instance_key: action.instance,
            });
            break;
          case 'start':
            await bbs.startActualLRP({
              ...refOf(action.key),
              expected: action.expected,
              instance_key: action.instance,
              net_info: action.netInfo,
            });
            break;
          case 'create-running':
            await bbs.startActualLRP({
              process_guid: action.key.process_guid,
              index: action.key.index,
              domain: action.key.domain,
              expected: null,
              instance_key: action.instance,
              net_info: action.netInfo,
            });
            break;
          case 'crash':
            await bbs.crashActualLRP({
              process_guid: action.key.process_guid,
              index: action.key.index,
              domain: action.key.domain,
              expected: action.expected,
              instance_key: action.instance,
              state: action.outcome.state,
              crash_count: action.outcome.crash_count,
              last_crashed_at: action.outcome.last_crashed_at,
              crash_reason: action.reason,
            });
            break;
          case 'remove-actual':
            await bbs.removeActualLRP({ ...refOf(action.key), expected: action.expected });
            break;
          case 'unclaim-and-request-start':
            await bbs.unclaimActualLRP({ ...refOf(action.key), expected: action.expected });
            break;
          case 'give-back':
            await bbs.failActualLRP({
              ...refOf(action.key),
              expected: action.expected,
              instance_key: action.instance,
              placement_error: action.placementError,
            });
            break;
          case 'delete-container': {
            if (action.revalidate && container) {
              // Seed: "To be safe it should always validate a decision it is about to make".
              const freshContainer = this.options.executor.get(action.containerGuid);
              if (!freshContainer) break;
              const freshActual = await this.actualFor(freshContainer);
              if (
                !stillDeletesContainer({
                  container: freshContainer,
                  actual: freshActual,
                  cellId: this.options.cellId,
                  now: this.now(),
                  policy: this.policy,
                })
              ) {
                return;
              }
            }
            await this.options.executor.deleteContainer(action.containerGuid);
            break;
          }
        }
      } catch (err) {
        if (
          isBerthError(err) &&
          (err.code === 'cas_conflict' ||
            err.code === 'not_found' ||
            err.code === 'illegal_transition' ||
            err.code === 'conflict')
        ) {
          this.log(`${action.kind}: ${err.message} (the next pass re-plans)`);
          return;
        }
        throw err;
      }
    }
  }

  private async reconcileTaskContainer(guid: string): Promise<void> {
    const container = this.options.executor.get(guid);
    if (container?.tags.kind !== 'task') return;
    const task = await this.options.bbs.getTask({ task_guid: container.tags.task_guid }).catch((err) => {
      if (isBerthError(err) && err.code === 'not_found') return null;
      throw err;
    });
    const fresh = this.options.executor.get(guid);
    if (!fresh) return;
    await this.applyTask(reconcileTask(fresh, task, this.options.cellId), task);
  }

  private async applyTask(actions: readonly TaskRepAction[], task: Task | null): Promise<void> {
    const bbs = this.options.bbs;
    for (const action of actions) {
      try {
        switch (action.kind) {
          case 'none':
            break;
          case 'start-task':
            await bbs.startTask({
              task_guid: action.taskGuid,
              expected: action.expected,
              cell_id: action.cellId,
            });
            break;
          case 'run-container':
            if (task) await this.options.executor.run(action.containerGuid, runSpecOfTask(task));
            break;
          case 'complete-task': {
            const container = this.options.executor.get(action.taskGuid);
            await bbs.completeTask({
              task_guid: action.taskGuid,
              expected: action.expected,
              cell_id: action.cellId,
              failed: action.failed,
              failure_reason: action.failureReason,
              result: container?.task_result ?? '',
            });
            break;
          }
          case 'fail-task':
            if (action.revalidate && this.options.executor.get(action.taskGuid)) return;
            await bbs.failTask({
              task_guid: action.taskGuid,
              expected: action.expected,
              failure_reason: action.failureReason,
            });
            break;
          case 'delete-container':
            await this.options.executor.deleteContainer(action.containerGuid);
            break;
        }
      } catch (err) {
        if (
          isBerthError(err) &&
          ['cas_conflict', 'not_found', 'illegal_transition', 'conflict'].includes(err.code)
        ) {
          // Lost the race (e.g. another rep started the task): drop our reservation.
          if (action.kind === 'start-task') await this.options.executor.deleteContainer(action.taskGuid);
          return;
        }
        throw err;
      }
    }
  }

  /**
   * Seed "Evacuation": refuse new work, destroy containers not yet RUNNING (their instances are
   * unclaimed and restarted elsewhere), move RUNNING instances to /evacuating with a start
   * request, keep them until the replacement runs, then exit (or at the timeout).
   */
  evacuate(): Promise<void> {
    if (this.evacuationDone) return this.evacuationDone;
    this.evacuating = true;
    this.evacuationDone = this.runEvacuation().finally(() => {
      for (const listener of this.evacuatedListeners) listener();
    });
    return this.evacuationDone;
  }

  private readonly evacuatedListeners: (() => void)[] = [];

  /** Called once evacuation finished (however it was started: API, drain, signal). */
  onEvacuated(listener: () => void): void {
    this.evacuatedListeners.push(listener);
  }

  private async runEvacuation(): Promise<void> {
    const deadline = Date.now() + (this.options.evacuationTimeoutMs ?? 10 * 60_000);
    const bbs = this.options.bbs;
    const moved = new Set<string>();
    for (;;) {
      const containers = this.options.executor.list();
      for (const c of containers) {
        if (c.tags.kind === 'task') continue; // tasks never move; they run out or fail at the deadline
        const actual = await this.actualFor(c);
        const ownedRunning =
          actual && actual.cell_id === this.options.cellId && actual.instance_guid === c.tags.instance_guid;
        if (
          !moved.has(c.guid) &&
          c.state === 'RUNNING' &&
          ownedRunning &&
          actual.state === 'RUNNING' &&
          c.net_info
        ) {
          await bbs
            .evacuateRunningActualLRP({
              process_guid: c.tags.process_guid,
              index: c.tags.index,
              expected: actual.modification_tag,
              instance_key: { instance_guid: c.guid, cell_id: this.options.cellId },
              net_info: c.net_info,
            })
            .then(() => moved.add(c.guid))
            .catch((err) => this.log(`evacuate ${c.guid}: ${String(err)}`));
          continue;
        }
        if (moved.has(c.guid)) {
          // Keep it until the replacement runs, or the instance is gone or crashed elsewhere.
          const replaced = !actual || actual.state === 'RUNNING' || actual.state === 'CRASHED';
          if (replaced) await this.dropEvacuating(c);
          continue;
        }
        if (c.state === 'RUNNING' && !ownedRunning) {
          // Nothing to hand over: the instance is gone (its LRP was removed or scaled down) or was
          // given to another cell. Stop it now instead of holding the drain until the timeout.
          await this.options.executor.deleteContainer(c.guid);
          continue;
        }
        if (c.state !== 'RUNNING') {
          await this.options.executor.deleteContainer(c.guid);
          if (
            actual &&
            actual.cell_id === this.options.cellId &&
            (actual.state === 'CLAIMED' || actual.state === 'RUNNING')
          ) {
            await bbs
              .unclaimActualLRP({
                process_guid: c.tags.process_guid,
                index: c.tags.index,
                expected: actual.modification_tag,
              })
              .catch(() => undefined);
          }
        }
      }
      const remaining = this.options.executor.list();
      if (remaining.length === 0 || Date.now() > deadline) break;
      await new Promise((resolve) => setTimeout(resolve, Math.min(500, this.options.pollIntervalMs ?? 500)));
    }
    // Seed: at exit the rep ensures nothing of it stays under /evacuating and that its running
    // tasks are COMPLETED.
    for (const c of this.options.executor.list()) {
      if (c.tags.kind === 'lrp') await this.dropEvacuating(c);
      else {
        const task = await bbs.getTask({ task_guid: c.tags.task_guid }).catch(() => null);
        if (task && task.state === 'RUNNING' && task.cell_id === this.options.cellId) {
          await bbs
            .failTask({
              task_guid: task.task_guid,
              expected: task.modification_tag,
              failure_reason: 'cell was evacuated before the task completed',
            })
            .catch(() => undefined);
        }
        await this.options.executor.deleteContainer(c.guid);
      }
    }
    // No heartbeat may put the presence back after it is removed.
    clearInterval(this.heartbeatTimer);
    await this.heartbeatRunning;
    await bbs.removeCell({ cell_id: this.options.cellId }).catch(() => undefined);
  }

  private async dropEvacuating(c: ExecutorContainer): Promise<void> {
    if (c.tags.kind !== 'lrp') return;
    const group = await this.options.bbs
      .getActualLRP({ process_guid: c.tags.process_guid, index: c.tags.index })
      .catch(() => null);
    const evac = group?.evacuating;
    if (evac && evac.instance_guid === c.guid) {
      await this.options.bbs
        .removeEvacuatingActualLRP({
          process_guid: c.tags.process_guid,
          index: c.tags.index,
          expected: evac.modification_tag,
          instance_key: { instance_guid: c.guid, cell_id: this.options.cellId },
        })
        .catch((err) => this.log(`remove evacuating ${c.guid}: ${String(err)}`));
    }
    await this.options.executor.deleteContainer(c.guid);
  }
}

/** The BBS's ActualLRP reference: the API refuses fields it does not expect (like domain). */
function refOf(key: { readonly process_guid: string; readonly index: number }): {
  process_guid: string;
  index: number;
} {
  return { process_guid: key.process_guid, index: key.index };
}

function runSpecOfLRP(
  desired: DesiredLRP,
  relations?: { env: Record<string, string>; files: Record<string, string> },
): ContainerRunSpec {
  return {
    image: desired.image,
    ...(desired.command ? { command: desired.command } : {}),
    // The DesiredLRP's own variables win over the relation snapshot.
    env: relations ? { ...relations.env, ...desired.env } : desired.env,
    ...(relations ? { shared_files: relations.files } : {}),
    ports: desired.ports,
    ...(desired.monitor ? { monitor: desired.monitor } : {}),
    start_timeout_s: desired.start_timeout_s,
  };
}

function runSpecOfTask(task: Task): ContainerRunSpec {
  return {
    image: task.image,
    ...(task.command ? { command: task.command } : {}),
    env: task.env,
    ports: [],
    ...(task.result_file ? { result_file: task.result_file } : {}),
  };
}
