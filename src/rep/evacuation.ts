import { type ActualLRPGroup, actualLrpKey } from '../bbs/index.js';
import { orAbsent, sleep } from '../core/index.js';
import type { ExecutorContainer, LRPContainerTags } from '../executor/index.js';
import {
  type EvacuationAction,
  type EvacuationSubject,
  type EvacuationTaskSubject,
  evacuatedTaskReason,
  handOverOver,
  planExit,
  planHandOver,
} from './evacuation-plan.js';
import type { RepContext } from './rep-context.js';

type LRPContainer = ExecutorContainer & { readonly tags: LRPContainerTags };

/** Evacuation ends by its own deadline, never by the rep's stop: the drain must finish its exit. */
const untilDeadline = new AbortController().signal;

/**
 * The applier of `evacuation-plan.ts`: reads the cell's containers and their BBS records, applies
 * each pass's plan, waits between passes, and at the end applies the exit plan. A failed write is
 * logged and the next pass plans again from a fresh read; a read that fails skips that container
 * for the pass (an unreachable BBS is never taken for an absent record).
 */
export async function runEvacuation(
  ctx: RepContext,
  options: {
    readonly timeoutMs: number;
    readonly passIntervalMs: number;
    /** The containers whose instance it moved to `/evacuating`, shared with the rep's reconcile. */
    readonly moved: Set<string>;
  },
): Promise<void> {
  const deadlineMs = ctx.now().getTime() + options.timeoutMs;
  const { moved } = options;
  for (;;) {
    const subjects: EvacuationSubject[] = [];
    for (const container of lrpContainers(ctx)) {
      const group = await readGroup(ctx, container);
      if (group === 'unreadable') continue;
      subjects.push({ container, group, moved: moved.has(container.guid) });
    }
    await applyEvacuation(ctx, planHandOver(subjects, ctx.cellId), moved);
    if (handOverOver(ctx.executor.list().length, ctx.now().getTime(), deadlineMs)) break;
    await sleep(options.passIntervalMs, untilDeadline);
  }
  const lrps: Omit<EvacuationSubject, 'moved'>[] = [];
  for (const container of lrpContainers(ctx)) {
    const group = await readGroup(ctx, container);
    // Unreadable: its /evacuating copy cannot be checked; the container goes all the same and the
    // converger removes a copy left behind.
    lrps.push({ container, group: group === 'unreadable' ? undefined : group });
  }
  const tasks: EvacuationTaskSubject[] = [];
  for (const c of ctx.executor.list()) {
    if (c.tags.kind !== 'task') continue;
    const taskGuid = c.tags.task_guid;
    // Unreadable: it cannot be failed from here; the container goes, and the converger fails the
    // task once this cell's presence is gone.
    const task = await orAbsent(ctx.bbs.getTask({ task_guid: taskGuid })).catch((err: unknown) => {
      ctx.log(`evacuate: task ${taskGuid} unreadable: ${String(err)}`);
      return undefined;
    });
    tasks.push({ containerGuid: c.guid, task });
  }
  await applyEvacuation(ctx, planExit(lrps, tasks, ctx.cellId), moved);
}

function lrpContainers(ctx: RepContext): LRPContainer[] {
  return ctx.executor.list().filter((c): c is LRPContainer => c.tags.kind === 'lrp');
}

async function readGroup(
  ctx: RepContext,
  c: LRPContainer,
): Promise<ActualLRPGroup | undefined | 'unreadable'> {
  try {
    return await orAbsent(ctx.bbs.getActualLRP({ process_guid: c.tags.process_guid, index: c.tags.index }));
  } catch (err) {
    ctx.log(`evacuate: ${actualLrpKey(c.tags)} unreadable, skipped this pass: ${String(err)}`);
    return 'unreadable';
  }
}

/** Applies one plan; each BBS write that fails is logged and left to the next pass (or the converger). */
async function applyEvacuation(
  ctx: RepContext,
  actions: readonly EvacuationAction[],
  moved: Set<string>,
): Promise<void> {
  const { bbs, executor, cellId } = ctx;
  for (const action of actions) {
    switch (action.kind) {
      case 'wait':
        break;
      case 'evacuate':
        // Marked first: a reconcile that reads the instance once it is UNCLAIMED must find the
        // container handed over already, or it would take the instance back (rep.ts).
        moved.add(action.containerGuid);
        try {
          await bbs.evacuateRunningActualLRP({
            ...action.ref,
            expected: action.expected,
            instance_key: { instance_guid: action.containerGuid, cell_id: cellId },
            net_info: action.netInfo,
          });
        } catch (err) {
          moved.delete(action.containerGuid);
          ctx.log(`evacuate ${action.containerGuid}: ${String(err)}`);
        }
        break;
      case 'drop-evacuating':
        if (action.evacuating) {
          await bbs
            .removeEvacuatingActualLRP({
              ...action.ref,
              expected: action.evacuating,
              instance_key: { instance_guid: action.containerGuid, cell_id: cellId },
            })
            .catch((err: unknown) => ctx.log(`remove evacuating ${action.containerGuid}: ${String(err)}`));
        }
        await executor.deleteContainer(action.containerGuid);
        break;
      case 'delete-container':
        await executor.deleteContainer(action.containerGuid);
        break;
      case 'unclaim':
        await bbs
          .unclaimActualLRP({ ...action.ref, expected: action.expected })
          .catch((err: unknown) => ctx.log(`unclaim ${actualLrpKey(action.ref)}: ${String(err)}`));
        break;
      case 'fail-task':
        await bbs
          .failTask({
            task_guid: action.taskGuid,
            expected: action.expected,
            failure_reason: evacuatedTaskReason,
          })
          .catch((err: unknown) => ctx.log(`fail task ${action.taskGuid}: ${String(err)}`));
        break;
    }
  }
}
