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
 * What applying a plan left behind: the record as its last write stored it (`null`: deleted;
 * absent: nothing written), and whether a write lost its race.
 */
export interface LRPActionsOutcome {
  readonly written?: ActualLRP | null;
  readonly lost: boolean;
}

/**
 * Applies the reconcile table's actions for one LRP container with CAS. Losing a race (the record
 * moved, vanished or was created meanwhile) ends the list: the next pass re-plans from fresh state.
 */
export async function applyLRPActions(
  ctx: RepContext,
  actions: readonly LRPRepAction[],
  container: ExecutorContainer | null,
): Promise<LRPActionsOutcome> {
  let written: ActualLRP | null | undefined;
  for (const action of actions) {
    if (action.kind !== 'none') ctx.log(`lrp action ${action.kind}`);
    try {
      const step = await applyLRPAction(ctx, action, container);
      if (step.written !== undefined) written = step.written;
      if (!step.proceed) break;
    } catch (err) {
      if (isSuperseded(err)) {
        ctx.log(
          `${action.kind}: ${err instanceof Error ? err.message : String(err)} (the next pass re-plans)`,
        );
        return { ...(written !== undefined ? { written } : {}), lost: true };
      }
      throw err;
    }
  }
  return { ...(written !== undefined ? { written } : {}), lost: false };
}

/** One action's step: whether the list goes on, and the record it wrote (`null`: deleted). */
interface ActionStep {
  readonly proceed: boolean;
  readonly written?: ActualLRP | null;
}

async function applyLRPAction(
  ctx: RepContext,
  action: LRPRepAction,
  container: ExecutorContainer | null,
): Promise<ActionStep> {
  const { bbs } = ctx;
  switch (action.kind) {
    case 'none':
      return next;
    case 'claim':
      return wrote(
        bbs.claimActualLRP({
          ...actualRef(action.key),
          expected: action.expected,
          instance_key: action.instance,
        }),
      );
    case 'start':
      return wrote(
        ctx.starts.start({
          ...actualRef(action.key),
          expected: action.expected,
          instance_key: action.instance,
          net_info: action.netInfo,
        }),
      );
    case 'create-running':
      return wrote(
        bbs.startActualLRP({
          process_guid: action.key.process_guid,
          index: action.key.index,
          domain: action.key.domain,
          expected: null,
          instance_key: action.instance,
          net_info: action.netInfo,
        }),
      );
    case 'crash':
      return wrote(
        bbs.crashActualLRP({
          process_guid: action.key.process_guid,
          index: action.key.index,
          domain: action.key.domain,
          expected: action.expected,
          instance_key: action.instance,
          state: action.outcome.state,
          crash_count: action.outcome.crash_count,
          last_crashed_at: action.outcome.last_crashed_at,
          crash_reason: action.reason,
        }),
      );
    case 'remove-actual':
      await bbs.removeActualLRP({ ...actualRef(action.key), expected: action.expected });
      return { proceed: true, written: null };
    case 'unclaim-and-request-start':
      return wrote(bbs.unclaimActualLRP({ ...actualRef(action.key), expected: action.expected }));
    case 'give-back':
      return wrote(
        bbs.failActualLRP({
          ...actualRef(action.key),
          expected: action.expected,
          instance_key: action.instance,
          placement_error: action.placementError,
        }),
      );
    case 'delete-container': {
      if (action.revalidate && container) {
        // Seed: "To be safe it should always validate a decision it is about to make".
        const freshContainer = ctx.executor.get(action.containerGuid);
        if (!freshContainer) return next;
        const freshActual = await actualFor(ctx, freshContainer);
        const stillDeletes = stillDeletesContainer({
          container: freshContainer,
          actual: freshActual,
          cellId: ctx.cellId,
          now: ctx.now(),
          policy: ctx.policy,
        });
        if (!stillDeletes) return { proceed: false };
      }
      await ctx.executor.deleteContainer(action.containerGuid);
      return next;
    }
  }
}

const next: ActionStep = { proceed: true };

async function wrote(write: Promise<ActualLRP>): Promise<ActionStep> {
  return { proceed: true, written: await write };
}

/** The BBS's ActualLRP reference: the API refuses fields it does not expect (like domain). */
export function actualRef(key: { readonly process_guid: string; readonly index: number }): {
  process_guid: string;
  index: number;
} {
  return { process_guid: key.process_guid, index: key.index };
}
