import type {
  ActualLRP,
  ActualLRPInstanceKey,
  ActualLRPKey,
  ActualLRPNetInfo,
  ModificationTag,
} from '../bbs/index.js';
import { InvalidArgumentError } from '../core/index.js';
import type { ContainerState, ExecutorContainer, LRPContainerTags } from '../executor/index.js';
import { type CrashOutcome, type CrashPolicy, nextCrashState } from './crash-policy.js';

/*
 * The rep's reconciliation of one container with one BBS record, as a pure function of the pair.
 * Events and polling both end here (seed 002: "The rep should handle events exactly as it handles
 * polling"). The table is data, row for row as the seed's "Harmonizing ActualLRPs with Container
 * State: Rep", so the tests, the docs and the code read the same rows.
 *
 * "A" is the reconciling cell, "O" any other. An ActualLRP is "by A"/"on A" only when both its
 * cell_id is A and its instance_guid is the container's: a new claim of the same index on A (after
 * a crash, say) is a different instance, and an old container must not act on it.
 */

// ---------------------------------------------------------------------------------------------
// LRPs

export type LRPContainerCase =
  | 'RESERVED'
  | 'INITIALIZING or CREATED'
  | 'RUNNING'
  | 'COMPLETED (crashed)'
  | 'COMPLETED (shutdown)'
  | 'COMPLETED (no image)'
  | 'No Container';

export type LRPActualCase =
  | 'ANY'
  | 'No ActualLRP'
  | 'UNCLAIMED'
  | 'CLAIMED by A'
  | 'CLAIMED by O'
  | 'RUNNING on A'
  | 'RUNNING on O'
  | 'CRASHED';

export type LRPRowAction =
  | 'Do Nothing'
  | 'Delete Container'
  | 'CAS to CLAIMED by A'
  | 'CREATE RUNNING on A'
  | 'CAS to RUNNING on A'
  | 'Perform RepCrashDance then Delete Container'
  | 'CAD ActualLRP then Delete Container'
  | 'CAS to UNCLAIMED, request a start'
  | 'Give it back UNCLAIMED with the placement error, then Delete Container';

export interface LRPReconcileRow {
  /** "<container> | <ActualLRP>" in the seed's own words (its "STARING on O" kept verbatim). */
  readonly name: string;
  readonly container: LRPContainerCase;
  /** The normalized case; DESIGN.md: "STARING on O" means "CLAIMED by O". */
  readonly actual: LRPActualCase;
  readonly action: LRPRowAction;
  readonly reason: string;
  /** `seed` rows are the seed's table; `berth` rows complete it where the seed is silent. */
  readonly source: 'seed' | 'berth';
}

function row(
  container: LRPContainerCase,
  actual: LRPActualCase,
  action: LRPRowAction,
  reason: string,
  source: 'seed' | 'berth' = 'seed',
  seedActual: string = actual,
): LRPReconcileRow {
  return { name: `${container} | ${seedActual}`, container, actual, action, reason, source };
}

const IC = 'INITIALIZING or CREATED';
const CC = 'COMPLETED (crashed)';
const CS = 'COMPLETED (shutdown)';
const CI = 'COMPLETED (no image)';
const giveBack = 'Give it back UNCLAIMED with the placement error, then Delete Container';
const NC = 'No Container';
const purged =
  'A just saw a crash but the BBS is empty. Perhaps BBS was accidentally purged? In that case: update it with what we know to be true.';

export const lrpReconcileTable: readonly LRPReconcileRow[] = [
  row('RESERVED', 'ANY', 'Do Nothing', 'A merely has a reservation the ActualLRP, no need to act yet.'),
  row(
    IC,
    'No ActualLRP',
    'Delete Container',
    'The consumer likely stopped desiring this ActualLRP while it was being auctioned',
  ),
  row(IC, 'UNCLAIMED', 'CAS to CLAIMED by A', 'A is starting this ActualLRP'),
  row(IC, 'CLAIMED by A', 'Do Nothing', 'A is starting this ActualLRP, no need to write to the BBS'),
  row(IC, 'CLAIMED by O', 'Delete Container', 'The ActualLRP is starting on O, stop starting it on A'),
  row(IC, 'RUNNING on A', 'Do Nothing', 'This should not be possible'),
  row(IC, 'RUNNING on O', 'Delete Container', 'The ActualLRP is running on O, stop starting it on A'),
  row(
    IC,
    'CRASHED',
    'Delete Container',
    'A is incorrectly starting the instance - some other Cell will pick this up later.',
  ),
  row(
    'RUNNING',
    'No ActualLRP',
    'CREATE RUNNING on A',
    "A is running on this ActualLRP, let Diego know so it can take action appropriately (we don't allow blank ActualLRPs to shut down containers as this would lead to catastrophic fail should the BBS be accidentally purged).",
  ),
  row(
    'RUNNING',
    'UNCLAIMED',
    'CAS to RUNNING on A',
    'A is running on this ActualLRP, no need to start it elsewhere',
  ),
  row('RUNNING', 'CLAIMED by A', 'CAS to RUNNING on A', 'A is running this ActualLRP'),
  row(
    'RUNNING',
    'CLAIMED by O',
    'CAS to RUNNING on A',
    'A is running this ActualLRP, no need to start it elsewhere',
  ),
  row('RUNNING', 'RUNNING on A', 'Do Nothing', 'A is running on this ActualLRP, no need to write to the BBS'),
  row('RUNNING', 'RUNNING on O', 'Delete Container', 'Instance is running on O, stop running it on A'),
  row(
    'RUNNING',
    'CRASHED',
    'CAS to RUNNING on A',
    "A is succesfully running this ActualLRP. It's not crashed and need not be restarted.",
  ),
  row(CC, 'No ActualLRP', 'Perform RepCrashDance then Delete Container', purged),
  row(CC, 'UNCLAIMED', 'Delete Container', 'Instance will be scheduled elsewhere'),
  row(
    CC,
    'CLAIMED by A',
    'Perform RepCrashDance then Delete Container',
    'Instance crashed on A while starting',
  ),
  row(
    CC,
    'CLAIMED by O',
    'Delete Container',
    'Instance is starting elsewhere, leave it be',
    'seed',
    'STARING on O',
  ),
  row(
    CC,
    'RUNNING on A',
    'Perform RepCrashDance then Delete Container',
    'Instance crashed on A while running',
  ),
  row(CC, 'RUNNING on O', 'Delete Container', 'Instance is running elsewhere, leave it be'),
  row(CC, 'CRASHED', 'Delete Container', 'The crash has already been noted'),
  row(CS, 'No ActualLRP', 'Perform RepCrashDance then Delete Container', purged),
  row(CS, 'UNCLAIMED', 'Delete Container', 'Nothing to be done'),
  row(
    CS,
    'CLAIMED by A',
    'CAD ActualLRP then Delete Container',
    'A was told to stop and should now clean up the BBS',
  ),
  row(
    CS,
    'CLAIMED by O',
    'Delete Container',
    'Instance is starting elsewhere, leave it be',
    'seed',
    'STARING on O',
  ),
  row(
    CS,
    'RUNNING on A',
    'CAD ActualLRP then Delete Container',
    'A was told to stop and should now clean up the BBS',
  ),
  row(CS, 'RUNNING on O', 'Delete Container', 'Instance is running elsewhere, leave it be'),
  row(CS, 'CRASHED', 'Delete Container', 'Nothing to do'),
  // Issue 7: an image that cannot be pulled is a placement error on the ActualLRP, not a crash
  // loop. The instance never ran, so there is no crash to count; the converger retries it later.
  row(CI, 'No ActualLRP', 'Delete Container', 'Nothing ran and nobody wants it', 'berth'),
  row(CI, 'UNCLAIMED', 'Delete Container', 'Nothing ran; the auction owns it', 'berth'),
  row(
    CI,
    'CLAIMED by A',
    giveBack,
    'A cannot get the image: say so, and let it be placed again later',
    'berth',
  ),
  row(CI, 'CLAIMED by O', 'Delete Container', 'O owns it', 'berth'),
  row(CI, 'RUNNING on A', giveBack, 'Cannot be: it never ran; treated like CLAIMED by A', 'berth'),
  row(CI, 'RUNNING on O', 'Delete Container', 'O owns it', 'berth'),
  row(CI, 'CRASHED', 'Delete Container', 'Nothing ran; the crash record stands', 'berth'),
  row(
    NC,
    'CLAIMED by A',
    'CAS to UNCLAIMED, request a start',
    'Diego thinks A is starting the instance, but it is not',
  ),
  row(
    NC,
    'RUNNING on A',
    'CAS to UNCLAIMED, request a start',
    'Diego thinks A is starting the instance, but it is not',
  ),
  // The seed lists only the "No Container" rows A must act on; the rest belong to others.
  row(NC, 'No ActualLRP', 'Do Nothing', 'Nothing exists on either side', 'berth'),
  row(NC, 'UNCLAIMED', 'Do Nothing', 'The auction owns it until some cell claims it', 'berth'),
  row(NC, 'CLAIMED by O', 'Do Nothing', 'O owns it', 'berth'),
  row(NC, 'RUNNING on O', 'Do Nothing', 'O owns it', 'berth'),
  row(NC, 'CRASHED', 'Do Nothing', 'The converger restarts it after its back-off', 'berth'),
];

const lrpRowIndex: ReadonlyMap<string, LRPReconcileRow> = new Map(
  lrpReconcileTable.map((r) => [`${r.container}|${r.actual}`, r]),
);

/** One step of a rep plan for an LRP, applied in order by the rep with CAS against the BBS. */
export type LRPRepAction =
  | { readonly kind: 'none' }
  /**
   * `revalidate`: the container is INITIALIZING/CREATED/RUNNING, so deleting it on a stale view
   * could kill a healthy instance. The applier fetches the ActualLRP and the container again and
   * deletes only if `reconcileLRP` on the fresh pair still says so (`stillDeletesContainer`).
   */
  | { readonly kind: 'delete-container'; readonly containerGuid: string; readonly revalidate: boolean }
  /** CAS to CLAIMED by A. */
  | {
      readonly kind: 'claim';
      readonly key: ActualLRPKey;
      readonly instance: ActualLRPInstanceKey;
      readonly expected: ModificationTag;
    }
  /** CAS to RUNNING on A (Diego's StartActualLRP), recording where the instance is reachable. */
  | {
      readonly kind: 'start';
      readonly key: ActualLRPKey;
      readonly instance: ActualLRPInstanceKey;
      readonly netInfo: ActualLRPNetInfo;
      readonly expected: ModificationTag;
    }
  /** CREATE RUNNING on A: the BBS lost the record of an instance A runs. */
  | {
      readonly kind: 'create-running';
      readonly key: ActualLRPKey;
      readonly instance: ActualLRPInstanceKey;
      readonly netInfo: ActualLRPNetInfo;
    }
  /**
   * The RepCrashDance: write `outcome` (CAS on `expected`, or create when it is null), and emit a
   * start when `outcome.requestStart`.
   */
  | {
      readonly kind: 'crash';
      readonly key: ActualLRPKey;
      readonly instance: ActualLRPInstanceKey;
      readonly expected: ModificationTag | null;
      readonly outcome: CrashOutcome;
      readonly reason: string;
    }
  /** CAD: compare-and-delete the ActualLRP. */
  | { readonly kind: 'remove-actual'; readonly key: ActualLRPKey; readonly expected: ModificationTag }
  /** CAS to UNCLAIMED and request a start from the auctioneer. */
  | {
      readonly kind: 'unclaim-and-request-start';
      readonly key: ActualLRPKey;
      readonly expected: ModificationTag;
    }
  /** CAS to UNCLAIMED with `placement_error` and no start request (failActualLRP by the claimant). */
  | {
      readonly kind: 'give-back';
      readonly key: ActualLRPKey;
      readonly instance: ActualLRPInstanceKey;
      readonly expected: ModificationTag;
      readonly placementError: string;
    };

export interface LRPReconcileInput {
  /** A container of this cell for the instance, or null ("No Container" includes "No Reservation"). */
  readonly container: ExecutorContainer | null;
  /** The `/instance` ActualLRP at the container's process_guid and index, or null. */
  readonly actual: ActualLRP | null;
  readonly cellId: string;
  readonly now: Date;
  readonly policy: CrashPolicy;
}

function lrpTags(container: ExecutorContainer): LRPContainerTags {
  if (container.tags.kind !== 'lrp') {
    throw new InvalidArgumentError(`Cannot reconcile container ${container.guid} as an LRP: it runs a task`, {
      container_guid: container.guid,
    });
  }
  return container.tags;
}

function containerCase(container: ExecutorContainer | null): LRPContainerCase {
  if (container === null) return 'No Container';
  const byState: Readonly<Record<ContainerState, LRPContainerCase>> = {
    RESERVED: 'RESERVED',
    INITIALIZING: 'INITIALIZING or CREATED',
    CREATED: 'INITIALIZING or CREATED',
    RUNNING: 'RUNNING',
    // A COMPLETED container without a result cannot say it was asked to stop: treat it as a crash,
    // so the instance is restarted rather than silently lost.
    COMPLETED:
      container.result?.kind === 'shutdown'
        ? 'COMPLETED (shutdown)'
        : container.result?.kind === 'no-image'
          ? 'COMPLETED (no image)'
          : 'COMPLETED (crashed)',
  };
  return byState[container.state];
}

function actualCase(
  actual: ActualLRP | null,
  container: ExecutorContainer | null,
  cellId: string,
): LRPActualCase {
  if (actual === null) return 'No ActualLRP';
  const onA =
    actual.cell_id === cellId &&
    (container === null || actual.instance_guid === lrpTags(container).instance_guid);
  switch (actual.state) {
    case 'UNCLAIMED':
      return 'UNCLAIMED';
    case 'CRASHED':
      return 'CRASHED';
    case 'CLAIMED':
      return onA ? 'CLAIMED by A' : 'CLAIMED by O';
    case 'RUNNING':
      return onA ? 'RUNNING on A' : 'RUNNING on O';
  }
}

/** The table row that governs this pair. */
export function matchLRPRow(
  input: Pick<LRPReconcileInput, 'container' | 'actual' | 'cellId'>,
): LRPReconcileRow {
  const { container, actual, cellId } = input;
  const tags = container === null ? null : lrpTags(container);
  if (container !== null && tags !== null && actual !== null) {
    if (tags.process_guid !== actual.process_guid || tags.index !== actual.index) {
      throw new InvalidArgumentError(
        `Cannot reconcile container ${container.guid} (${tags.process_guid}/${tags.index}) with ActualLRP ${actual.process_guid}/${actual.index}`,
        { container_guid: container.guid },
      );
    }
  }
  const c = containerCase(container);
  const key = `${c}|${c === 'RESERVED' ? 'ANY' : actualCase(actual, container, cellId)}`;
  const found = lrpRowIndex.get(key);
  // Unreachable while the table covers every case; the test "every combination has a row" says so.
  if (found === undefined) throw new InvalidArgumentError(`No rep table row for ${key}`);
  return found;
}

/** States whose container still runs (or is about to): its record is read again before acting. */
export const activeStates: ReadonlySet<ContainerState> = new Set(['INITIALIZING', 'CREATED', 'RUNNING']);
const noNetInfo: ActualLRPNetInfo = { address: '', ports: [] };

/** The rep's plan for one container/ActualLRP pair: the governing row's action, spelled out. */
export function reconcileLRP(input: LRPReconcileInput): readonly LRPRepAction[] {
  const { container, actual, cellId, now, policy } = input;
  const r = matchLRPRow(input);
  if (r.action === 'Do Nothing') return [{ kind: 'none' }];
  if (r.action === 'CAS to UNCLAIMED, request a start') {
    // Only "No Container" rows with an ActualLRP on A lead here.
    const a = actual as ActualLRP;
    return [{ kind: 'unclaim-and-request-start', key: keyOf(a), expected: a.modification_tag }];
  }
  // Every other row has a container.
  const c = container as ExecutorContainer;
  const tags = lrpTags(c);
  const key: ActualLRPKey = { process_guid: tags.process_guid, index: tags.index, domain: tags.domain };
  const instance: ActualLRPInstanceKey = { instance_guid: tags.instance_guid, cell_id: cellId };
  const netInfo = c.net_info ?? noNetInfo;
  const del: LRPRepAction = {
    kind: 'delete-container',
    containerGuid: c.guid,
    revalidate: activeStates.has(c.state),
  };
  switch (r.action) {
    case 'Delete Container':
      return [del];
    case 'CAS to CLAIMED by A':
      return [{ kind: 'claim', key, instance, expected: (actual as ActualLRP).modification_tag }];
    case 'CREATE RUNNING on A':
      return [{ kind: 'create-running', key, instance, netInfo }];
    case 'CAS to RUNNING on A':
      return [{ kind: 'start', key, instance, netInfo, expected: (actual as ActualLRP).modification_tag }];
    case 'Perform RepCrashDance then Delete Container':
      return [
        {
          kind: 'crash',
          key,
          instance,
          expected: actual?.modification_tag ?? null,
          outcome: nextCrashState(actual, now, policy),
          reason: c.result?.reason ?? 'container completed without a result',
        },
        del,
      ];
    case 'CAD ActualLRP then Delete Container':
      return [{ kind: 'remove-actual', key, expected: (actual as ActualLRP).modification_tag }, del];
    case giveBack:
      return [
        {
          kind: 'give-back',
          key,
          instance,
          expected: (actual as ActualLRP).modification_tag,
          placementError: c.result?.reason ?? 'the image could not be had',
        },
        del,
      ];
  }
}

function keyOf(a: ActualLRP): ActualLRPKey {
  return { process_guid: a.process_guid, index: a.index, domain: a.domain };
}

/**
 * The re-validation the seed asks for before deleting an INITIALIZING/CREATED/RUNNING container:
 * true when the plan on freshly fetched state still deletes this container.
 */
export function stillDeletesContainer(fresh: LRPReconcileInput): boolean {
  const guid = fresh.container?.guid;
  return reconcileLRP(fresh).some((a) => a.kind === 'delete-container' && a.containerGuid === guid);
}
