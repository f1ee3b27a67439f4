import type { ActualLRPGroup, ActualLRPNetInfo, ModificationTag, Task } from '../bbs/index.js';
import type { ExecutorContainer, LRPContainerTags } from '../executor/index.js';

/**
 * Seed 002 "Evacuation" as pure functions, applied by `evacuation.ts`: a draining rep refuses new
 * work, destroys containers not yet RUNNING (their instances are unclaimed and start elsewhere),
 * moves RUNNING instances to /evacuating with a start request, keeps each until its replacement
 * runs, and at the end (nothing left, or the deadline) leaves nothing of itself under
 * /evacuating and fails its RUNNING tasks. Every decision here is made from one read of the
 * cell's containers and the BBS, so each rule has a test (`evacuation-plan.test.ts`).
 */

/** The instance an LRP container runs, as the BBS ref names it. */
export interface InstanceRef {
  readonly process_guid: string;
  readonly index: number;
}

/** One LRP container of the draining cell and what the BBS holds for its instance. */
export interface EvacuationSubject {
  readonly container: ExecutorContainer & { readonly tags: LRPContainerTags };
  /** The instance's records; undefined when the BBS has none (the LRP was removed or scaled down). */
  readonly group: ActualLRPGroup | undefined;
  /** This rep already moved the instance to /evacuating (an earlier pass of this evacuation). */
  readonly moved: boolean;
}

export type EvacuationAction =
  /** Hand the RUNNING instance over: keep it under /evacuating, start a replacement elsewhere. */
  | {
      readonly kind: 'evacuate';
      readonly containerGuid: string;
      readonly ref: InstanceRef;
      readonly expected: ModificationTag;
      readonly netInfo: ActualLRPNetInfo;
    }
  /**
   * The instance needs this container no more: remove this cell's copy under /evacuating (when
   * `evacuating` names it) and delete the container.
   */
  | {
      readonly kind: 'drop-evacuating';
      readonly containerGuid: string;
      readonly ref: InstanceRef;
      readonly evacuating: ModificationTag | undefined;
    }
  | { readonly kind: 'delete-container'; readonly containerGuid: string; readonly why: string }
  /** After deleting a container that never ran: the instance is this cell's no more. */
  | { readonly kind: 'unclaim'; readonly ref: InstanceRef; readonly expected: ModificationTag }
  | { readonly kind: 'fail-task'; readonly taskGuid: string; readonly expected: ModificationTag }
  /** Nothing to do this pass (the replacement does not run yet, or the container is still starting). */
  | { readonly kind: 'wait'; readonly containerGuid: string; readonly why: string };

export const evacuatedTaskReason = 'cell was evacuated before the task completed';

/** One pass of the hand-over: what to do with each LRP container of the draining cell. */
export function planHandOver(subjects: readonly EvacuationSubject[], cellId: string): EvacuationAction[] {
  return subjects.flatMap((subject) => handOverActions(subject, cellId));
}

function handOverActions(
  { container: c, group, moved }: EvacuationSubject,
  cellId: string,
): EvacuationAction[] {
  const actual = group?.instance ?? null;
  const ref = { process_guid: c.tags.process_guid, index: c.tags.index };
  if (moved) {
    // Keep it until the replacement runs, or the instance is gone or crashed elsewhere.
    const replaced = !actual || actual.state === 'RUNNING' || actual.state === 'CRASHED';
    return replaced
      ? [{ kind: 'drop-evacuating', containerGuid: c.guid, ref, evacuating: ownEvacuatingTag(c, group) }]
      : [{ kind: 'wait', containerGuid: c.guid, why: 'the replacement does not run yet' }];
  }
  const owned = actual !== null && actual.cell_id === cellId && actual.instance_guid === c.tags.instance_guid;
  if (c.state === 'RUNNING') {
    if (owned && actual.state === 'RUNNING' && c.net_info) {
      return [
        {
          kind: 'evacuate',
          containerGuid: c.guid,
          ref,
          expected: actual.modification_tag,
          netInfo: c.net_info,
        },
      ];
    }
    // Nothing to hand over: the instance is gone (its LRP was removed or scaled down) or was given
    // to another cell. Stop it now instead of holding the drain until the timeout.
    if (!owned) return [{ kind: 'delete-container', containerGuid: c.guid, why: 'the instance is not ours' }];
    return [{ kind: 'wait', containerGuid: c.guid, why: 'the instance is not RUNNING in the BBS yet' }];
  }
  // Not RUNNING yet: destroy it; an instance this cell claimed or ran goes back to UNCLAIMED.
  const actions: EvacuationAction[] = [
    { kind: 'delete-container', containerGuid: c.guid, why: 'it never ran here' },
  ];
  if (actual && actual.cell_id === cellId && (actual.state === 'CLAIMED' || actual.state === 'RUNNING')) {
    actions.push({ kind: 'unclaim', ref, expected: actual.modification_tag });
  }
  return actions;
}

/** The hand-over ends when the cell holds no container or the deadline has passed. */
export function handOverOver(containersLeft: number, nowMs: number, deadlineMs: number): boolean {
  return containersLeft === 0 || nowMs > deadlineMs;
}

/** A task container of the draining cell and its task (undefined: the BBS has none). */
export interface EvacuationTaskSubject {
  readonly containerGuid: string;
  readonly task: Task | undefined;
}

/**
 * Seed: at exit the rep ensures nothing of it stays under /evacuating and that its running tasks
 * are COMPLETED (failed: tasks never move). Every container left is deleted.
 */
export function planExit(
  lrps: readonly Omit<EvacuationSubject, 'moved'>[],
  tasks: readonly EvacuationTaskSubject[],
  cellId: string,
): EvacuationAction[] {
  const actions: EvacuationAction[] = lrps.map(({ container: c, group }) => ({
    kind: 'drop-evacuating',
    containerGuid: c.guid,
    ref: { process_guid: c.tags.process_guid, index: c.tags.index },
    evacuating: ownEvacuatingTag(c, group),
  }));
  for (const { containerGuid, task } of tasks) {
    if (task && task.state === 'RUNNING' && task.cell_id === cellId) {
      actions.push({ kind: 'fail-task', taskGuid: task.task_guid, expected: task.modification_tag });
    }
    actions.push({ kind: 'delete-container', containerGuid, why: 'the cell is evacuated' });
  }
  return actions;
}

/** The tag of the /evacuating copy when it is this container's (never another cell's copy). */
function ownEvacuatingTag(
  c: ExecutorContainer,
  group: ActualLRPGroup | undefined,
): ModificationTag | undefined {
  const evacuating = group?.evacuating;
  return evacuating && evacuating.instance_guid === c.guid ? evacuating.modification_tag : undefined;
}
