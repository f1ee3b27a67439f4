import type { ActualLRP } from '../bbs/index.js';
import { isSuperseded, orAbsent } from '../core/index.js';
import type { ExecutorContainer } from '../executor/index.js';
import { type LRPRepAction, stillDeletesContainer } from './reconcile-table.js';
import type { RepContext } from './rep-context.js';

/** The ActualLRP instance an LRP container runs for (null: none, or a task container). */
export async function actualFor(ctx: RepContext, container: ExecutorContainer): Promise<ActualLRP | null> {
  if (container.tags.kind !== 'lrp') return null;
  const { process_guid, index } = container.tags;
  const group = await orAbsent(ctx.bbs.getActualLRP({ process_guid, index }));
  return group?.instance ?? null;
}

/**
 * Applies the reconcile table's actions for one LRP container with CAS. Losing a race (the record
 * moved, vanished or was created meanwhile) ends the list: the next pass re-plans from fresh state.
 */
export async function applyLRPActions(
  ctx: RepContext,
  actions: readonly LRPRepAction[],
  container: ExecutorContainer | null,
): Promise<void> {
  for (const action of actions) {
    if (action.kind !== 'none') ctx.log(`lrp action ${action.kind}`);
    try {
      if ((await applyLRPAction(ctx, action, container)) === 'stop') return;
    } catch (err) {
      if (isSuperseded(err)) {
        ctx.log(
          `${action.kind}: ${err instanceof Error ? err.message : String(err)} (the next pass re-plans)`,
        );
        return;
      }
      throw err;
    }
  }
}

async function applyLRPAction(
  ctx: RepContext,
  action: LRPRepAction,
  container: ExecutorContainer | null,
): Promise<'next' | 'stop'> {
  const { bbs } = ctx;
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
        const freshContainer = ctx.executor.get(action.containerGuid);
        if (!freshContainer) break;
        const freshActual = await actualFor(ctx, freshContainer);
        const stillDeletes = stillDeletesContainer({
          container: freshContainer,
          actual: freshActual,
          cellId: ctx.cellId,
          now: ctx.now(),
          policy: ctx.policy,
        });
        if (!stillDeletes) return 'stop';
      }
      await ctx.executor.deleteContainer(action.containerGuid);
      break;
    }
  }
  return 'next';
}

/** The BBS's ActualLRP reference: the API refuses fields it does not expect (like domain). */
function refOf(key: { readonly process_guid: string; readonly index: number }): {
  process_guid: string;
  index: number;
} {
  return { process_guid: key.process_guid, index: key.index };
}
