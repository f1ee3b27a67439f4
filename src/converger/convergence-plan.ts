import {
  type ActualLRPInstanceKey,
  type ActualLRPKey,
  actualLrpKey,
  type CellPresence,
  type ConvergenceActualLRP,
  type DesiredLRP,
  type Domain,
  type LRPStartRequest,
  type ModificationTag,
  type SettledInstances,
  type Task,
} from '../bbs/index.js';
import { type CrashPolicy, defaultCrashPolicy, shouldRestartCrashed } from '../rep/index.js';

/** Every interval of a convergence pass, in milliseconds, so tests and operators can shrink them. */
export interface ConvergenceConfig {
  readonly crashPolicy: CrashPolicy;
  /** An ActualLRP UNCLAIMED longer than this gets its start request re-emitted (placement retry). */
  readonly unclaimedStartTimeoutMs: number;
  /** A PENDING task not updated for this long is re-auctioned; a RESOLVING one is demoted. */
  readonly taskKickIntervalMs: number;
  /** A task PENDING this long after creation fails instead. */
  readonly taskPendingLimitMs: number;
  /** A COMPLETED task is deleted this long after it first completed. */
  readonly taskCompletedTtlMs: number;
}

/** Diego's defaults (kick 30 s, pending 30 min, completed 2 min). */
export const defaultConvergenceConfig: ConvergenceConfig = {
  crashPolicy: defaultCrashPolicy,
  unclaimedStartTimeoutMs: 30_000,
  taskKickIntervalMs: 30_000,
  taskPendingLimitMs: 30 * 60_000,
  taskCompletedTtlMs: 2 * 60_000,
};

export const cellDisappearedReason = 'cell disappeared before completion';
export const pendingExpiredReason = 'task was not started within the pending time limit';

/**
 * One step of the plan. Items that write an existing record carry its `expected` tag for the CAS;
 * items that lead to a start carry the start request to send once the write succeeded.
 */
export type LRPConvergenceItem =
  /** 1. Reap: CLAIMED/RUNNING on a cell that is gone → CAS to UNCLAIMED, then start. */
  | {
      readonly kind: 'unclaim-and-start';
      readonly key: ActualLRPKey;
      readonly expected: ModificationTag;
      readonly vanishedCellId: string;
      readonly start: LRPStartRequest;
    }
  /** 2. Missing index → CREATE an UNCLAIMED ActualLRP, then start. */
  | { readonly kind: 'create-and-start'; readonly key: ActualLRPKey; readonly start: LRPStartRequest }
  /** 3. Extra CLAIMED/RUNNING on a live cell → a stop to that cell's rep (it removes the record). */
  | { readonly kind: 'stop'; readonly key: ActualLRPKey; readonly instance: ActualLRPInstanceKey }
  /** 3. Extra UNCLAIMED/CRASHED (or on a vanished cell, whose rep cannot answer) → CAD. */
  | { readonly kind: 'remove-actual'; readonly key: ActualLRPKey; readonly expected: ModificationTag }
  /** 4. CRASHED whose back-off has passed → CAS to UNCLAIMED, then start. */
  | {
      readonly kind: 'restart-crashed';
      readonly key: ActualLRPKey;
      readonly expected: ModificationTag;
      readonly start: LRPStartRequest;
    }
  /** 5. UNCLAIMED too long → send the start again (no write). */
  | { readonly kind: 're-emit-start'; readonly key: ActualLRPKey; readonly start: LRPStartRequest }
  /** An `/evacuating` copy whose cell is gone can never be cleaned up by its rep → delete it. */
  | { readonly kind: 'remove-evacuating'; readonly key: ActualLRPKey; readonly expected: ModificationTag };

export type TaskConvergenceItem =
  /** PENDING past the kick interval → auction it again. */
  | { readonly kind: 'kick-task'; readonly taskGuid: string }
  /** PENDING past the pending limit, or RUNNING on a vanished cell → COMPLETED, failed. */
  | {
      readonly kind: 'fail-task';
      readonly taskGuid: string;
      readonly expected: ModificationTag;
      readonly reason: string;
    }
  /** RESOLVING past the kick interval (its resolver died) → back to COMPLETED. */
  | { readonly kind: 'demote-resolving'; readonly taskGuid: string; readonly expected: ModificationTag }
  /** COMPLETED past its TTL → delete. */
  | { readonly kind: 'delete-task'; readonly taskGuid: string; readonly expected: ModificationTag };

export interface ConvergenceInput {
  readonly desired: readonly DesiredLRP[];
  /** Instance and `/evacuating` records alike (`evacuating` tells them apart). */
  readonly actuals: readonly ConvergenceActualLRP[];
  /** Cell presences; one whose expires_at has passed counts as gone. */
  readonly cells: readonly CellPresence[];
  readonly domains: readonly Domain[];
  readonly tasks: readonly Task[];
  /**
   * Instances whose start request is still in the outbox: an UNCLAIMED one among them is waiting
   * for the auctioneer, not lost, and is not re-emitted however long it waits.
   */
  readonly queuedStarts?: readonly { readonly process_guid: string; readonly index: number }[];
  /**
   * LRPs whose settled instances the read left out of `actuals` (`ConvergenceSnapshot`): each of
   * their indices with no record in `actuals` has a settled instance, so it is not missing.
   */
  readonly settled?: readonly SettledInstances[];
  readonly now: Date;
  readonly config: ConvergenceConfig;
}

export interface ConvergencePlan {
  readonly lrps: readonly LRPConvergenceItem[];
  readonly tasks: readonly TaskConvergenceItem[];
}

export function startRequestFor(desired: DesiredLRP, indices: readonly number[]): LRPStartRequest {
  return {
    process_guid: desired.process_guid,
    domain: desired.domain,
    indices,
    memory_mb: desired.memory_mb,
    disk_mb: desired.disk_mb,
    placement_tags: desired.placement_tags,
  };
}

/** Folds single-index start requests into one per process_guid, for one auction batch. */
export function mergeStartRequests(requests: readonly LRPStartRequest[]): LRPStartRequest[] {
  const byGuid = new Map<string, { req: LRPStartRequest; indices: number[] }>();
  for (const req of requests) {
    const entry = byGuid.get(req.process_guid);
    if (entry === undefined) byGuid.set(req.process_guid, { req, indices: [...req.indices] });
    else entry.indices.push(...req.indices);
  }
  return [...byGuid.values()].map(({ req, indices }) => ({
    ...req,
    indices: [...new Set(indices)].sort((a, b) => a - b),
  }));
}

function keyOf(a: ConvergenceActualLRP): ActualLRPKey {
  return { process_guid: a.process_guid, index: a.index, domain: a.domain };
}

/**
 * The converger's pass as a pure function (seed 002, "Harmonizing DesiredLRPs with Actual LRPs";
 * DESIGN.md and issue 5 for tasks). The applier executes the items with CAS; an item whose CAS
 * fails is simply dropped, since the next pass recomputes from fresh state.
 *
 * Destructive LRP items (stop, remove-actual) only ever appear for a fresh domain: a stale domain
 * means the consumer has not finished telling the BBS what it wants, so "extra" may be wrong.
 */
export function planConvergence(input: ConvergenceInput): ConvergencePlan {
  const { desired, actuals, cells, domains, tasks, now, config } = input;
  const nowMs = now.getTime();
  const queued = new Set((input.queuedStarts ?? []).map(actualLrpKey));
  const settled = new Set((input.settled ?? []).map((s) => s.process_guid));

  const liveCells = new Set<string>();
  for (const c of cells) if (Date.parse(c.expires_at) > nowMs) liveCells.add(c.cell_id);
  const freshDomains = new Set<string>();
  for (const d of domains) if (Date.parse(d.fresh_until) > nowMs) freshDomains.add(d.domain);

  const instancesByGuid = new Map<string, ConvergenceActualLRP[]>();
  const lrps: LRPConvergenceItem[] = [];
  for (const a of actuals) {
    if (a.evacuating) {
      // The converger plays no role in evacuation, except for copies no rep will ever clean up.
      if (!liveCells.has(a.cell_id))
        lrps.push({ kind: 'remove-evacuating', key: keyOf(a), expected: a.modification_tag });
      continue;
    }
    let list = instancesByGuid.get(a.process_guid);
    if (list === undefined) {
      list = [];
      instancesByGuid.set(a.process_guid, list);
    }
    list.push(a);
  }

  const onVanishedCell = (a: ConvergenceActualLRP): boolean =>
    (a.state === 'CLAIMED' || a.state === 'RUNNING') && !liveCells.has(a.cell_id);

  function retire(a: ConvergenceActualLRP): void {
    if (a.state === 'UNCLAIMED' || a.state === 'CRASHED' || !liveCells.has(a.cell_id)) {
      lrps.push({ kind: 'remove-actual', key: keyOf(a), expected: a.modification_tag });
    } else {
      lrps.push({
        kind: 'stop',
        key: keyOf(a),
        instance: { instance_guid: a.instance_guid, cell_id: a.cell_id },
      });
    }
  }

  const desiredGuids = new Set<string>();
  for (const d of desired) {
    desiredGuids.add(d.process_guid);
    const fresh = freshDomains.has(d.domain);
    const present = new Uint8Array(Math.max(d.instances, 0));
    for (const a of instancesByGuid.get(d.process_guid) ?? []) {
      if (a.index >= d.instances || a.index < 0) {
        if (fresh) retire(a);
        continue;
      }
      // A duplicate record for one index cannot come from the BBS (one row per key); ignore it.
      if (present[a.index] === 1) continue;
      present[a.index] = 1;
      if (onVanishedCell(a)) {
        lrps.push({
          kind: 'unclaim-and-start',
          key: keyOf(a),
          expected: a.modification_tag,
          vanishedCellId: a.cell_id,
          start: startRequestFor(d, [a.index]),
        });
      } else if (a.state === 'CRASHED') {
        if (shouldRestartCrashed(a, now, config.crashPolicy)) {
          lrps.push({
            kind: 'restart-crashed',
            key: keyOf(a),
            expected: a.modification_tag,
            start: startRequestFor(d, [a.index]),
          });
        }
      } else if (a.state === 'UNCLAIMED') {
        // Re-emitting one still queued would only add a duplicate: in a burst larger than the
        // auctioneer places in the timeout, each pass re-emitted every waiting instance, and the
        // duplicates (each auctioned, claimed, refused) slowed the burst down more with each pass.
        const stillQueued = queued.has(actualLrpKey(a));
        if (!stillQueued && nowMs - Date.parse(a.since) >= config.unclaimedStartTimeoutMs) {
          lrps.push({ kind: 're-emit-start', key: keyOf(a), start: startRequestFor(d, [a.index]) });
        }
      }
    }
    // Every index of a settled LRP has a record: one not listed is a settled instance.
    if (settled.has(d.process_guid)) continue;
    for (let index = 0; index < present.length; index++) {
      if (present[index] === 0) {
        lrps.push({
          kind: 'create-and-start',
          key: { process_guid: d.process_guid, index, domain: d.domain },
          start: startRequestFor(d, [index]),
        });
      }
    }
  }
  // ActualLRPs nobody desires any more: every index is extra.
  for (const [guid, list] of instancesByGuid) {
    if (desiredGuids.has(guid)) continue;
    for (const a of list) if (freshDomains.has(a.domain)) retire(a);
  }

  return { lrps, tasks: planTaskConvergence(tasks, liveCells, nowMs, config) };
}

/** Plan items about records that are absent from the input, which a lost-cells plan must not make. */
const absentRecordKinds: ReadonlySet<LRPConvergenceItem['kind']> = new Set([
  'create-and-start',
  're-emit-start',
]);

/**
 * The part of the pass that is about cells that just went, planned from their records alone, so
 * that their instances go back to the auctioneer without reading every ActualLRP in the store
 * (a full pass at 100,000 instances reads them all; a lost cell holds a hundred or so).
 *
 * `actuals` and `tasks` are the records whose `cell_id` is one of the lost cells; `desired`,
 * `cells` and `domains` are the whole sets, as for a full pass. For every record given, the items
 * are the ones `planConvergence` makes for it with the whole store as input: each record's item
 * depends only on itself, its DesiredLRP, the live cells and its domain's freshness, never on
 * other records (one row per key). What is left out is what only the whole store can tell:
 * indices with no record (create) and UNCLAIMED instances waiting too long (re-emit), which are
 * on no cell. The periodic full pass still plans everything.
 */
export function planLostCells(input: Omit<ConvergenceInput, 'queuedStarts'>): ConvergencePlan {
  const plan = planConvergence(input);
  return { lrps: plan.lrps.filter((item) => !absentRecordKinds.has(item.kind)), tasks: plan.tasks };
}

function planTaskConvergence(
  tasks: readonly Task[],
  liveCells: ReadonlySet<string>,
  nowMs: number,
  config: ConvergenceConfig,
): TaskConvergenceItem[] {
  const items: TaskConvergenceItem[] = [];
  for (const t of tasks) {
    switch (t.state) {
      case 'PENDING':
        if (nowMs - Date.parse(t.created_at) >= config.taskPendingLimitMs) {
          items.push({
            kind: 'fail-task',
            taskGuid: t.task_guid,
            expected: t.modification_tag,
            reason: pendingExpiredReason,
          });
        } else if (nowMs - Date.parse(t.updated_at) >= config.taskKickIntervalMs) {
          items.push({ kind: 'kick-task', taskGuid: t.task_guid });
        }
        break;
      case 'RUNNING':
        // Never restarted (at most once): a task whose cell vanished fails.
        if (!liveCells.has(t.cell_id)) {
          items.push({
            kind: 'fail-task',
            taskGuid: t.task_guid,
            expected: t.modification_tag,
            reason: cellDisappearedReason,
          });
        }
        break;
      case 'RESOLVING':
        if (nowMs - Date.parse(t.updated_at) >= config.taskKickIntervalMs) {
          items.push({ kind: 'demote-resolving', taskGuid: t.task_guid, expected: t.modification_tag });
        }
        break;
      case 'COMPLETED':
        if (nowMs - Date.parse(t.first_completed_at ?? t.updated_at) >= config.taskCompletedTtlMs) {
          items.push({ kind: 'delete-task', taskGuid: t.task_guid, expected: t.modification_tag });
        }
        break;
    }
  }
  return items;
}
