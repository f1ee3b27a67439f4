import { randomUUID } from 'node:crypto';
import { BerthError, InvalidArgumentError, isBerthError, NotFoundError } from '../../core/index.js';
import { actualLrpKey } from '../actual-lrp-key.js';
import { assertActualLRPTransition } from '../actual-lrp-transitions.js';
import type {
  ActualLRPFilter,
  ActualLRPGroup,
  ActualLRPRef,
  CasActualLRPRequest,
  ClaimActualLRPRequest,
  ClaimActualLRPsRequest,
  ClaimActualLRPsResult,
  ClaimRefusal,
  CrashActualLRPRequest,
  EvacuateRunningActualLRPRequest,
  FailActualLRPRequest,
  RemoveActualLRPRequest,
  RemoveEvacuatingActualLRPRequest,
  RetireActualLRPResult,
  StartActualLRPRequest,
  StartActualLRPsRequest,
  StartActualLRPsResult,
  StartResult,
  UnclaimActualLRPsRequest,
  UnclaimActualLRPsResult,
} from '../bbs-store.js';
import type { ActualLRP, DesiredLRP, PortMapping } from '../bbs-types.js';
import { type ActualChange, loadActualsForUpdate, replaceActuals } from './actual-lrp-batch-records.js';
import {
  assertOwner,
  createActual,
  deleteActual,
  domainFor,
  listActual,
  loadActual,
  replaceActual,
  requireActual,
  retire,
} from './actual-lrp-records.js';
import { loadDesired, loadDesiredOfMany } from './desired-lrp-records.js';
import { recordStartRequests, recordStartRequestsOfMany, requestStartIfDesired } from './request-outbox.js';
import { actualToRow, newUnclaimed, readAllActual, rowToActual } from './row-mapping.js';
import { nextTag, requireTag, type StoreContext, type Tx, validatePage } from './store-context.js';
import { loadDesiredVolumes, recordVolumePins } from './volume-pins.js';

/**
 * ActualLRPs: the reads, and every action of seed 002's lifecycle (claim, start, crash, fail,
 * unclaim, retire, evacuate, remove), each one transaction checked against the transition table
 * and the caller's tag.
 */
export class ActualLrpStore {
  readonly #ctx: StoreContext;

  constructor(ctx: StoreContext) {
    this.#ctx = ctx;
  }

  async listActualLRPs(req: ActualLRPFilter = {}): Promise<ActualLRP[]> {
    validatePage(req);
    const unfiltered =
      req.process_guid === undefined &&
      req.domain === undefined &&
      req.cell_id === undefined &&
      req.limit === undefined &&
      req.after === undefined;
    if (unfiltered) return this.#ctx.backend.readRows(readAllActual);
    return listActual(this.#ctx.db, req);
  }

  async getActualLRP(req: ActualLRPRef): Promise<ActualLRPGroup> {
    const rows = await this.#ctx.db
      .selectFrom('actual_lrps')
      .selectAll()
      .where('process_guid', '=', req.process_guid)
      .where('idx', '=', req.index)
      .execute();
    const group = { instance: null as ActualLRP | null, evacuating: null as ActualLRP | null };
    for (const row of rows) {
      const lrp = rowToActual(row);
      if (lrp.evacuating) group.evacuating = lrp;
      else group.instance = lrp;
    }
    if (!group.instance && !group.evacuating) throw new NotFoundError('ActualLRP', actualLrpKey(req));
    return group;
  }

  // ---------------------------------------------------------------- ActualLRPs: actions

  async createActualLRP(req: ActualLRPRef): Promise<ActualLRP> {
    return this.#ctx.mutate('createActualLRP', async (tx) => {
      const desired = await loadDesired(tx, req.process_guid, true);
      if (!desired) throw new NotFoundError('DesiredLRP', req.process_guid);
      if (!Number.isInteger(req.index) || req.index < 0 || req.index >= desired.instances) {
        throw new InvalidArgumentError(
          `Cannot create ActualLRP ${actualLrpKey(req)}: index must be below the ${desired.instances} desired instances`,
          { field: 'index' },
        );
      }
      const existing = await loadActual(tx, req, false, true);
      if (existing) {
        throw new BerthError(
          'already_exists',
          `Cannot create ActualLRP ${actualLrpKey(req)}: it already exists`,
          {
            kind: 'ActualLRP',
            id: actualLrpKey(req),
            current: existing,
          },
        );
      }
      const lrp = newUnclaimed(req.process_guid, req.index, desired.domain, tx.now);
      await tx.db.insertInto('actual_lrps').values(actualToRow(lrp)).execute();
      tx.events.push({ type: 'actual_lrp_created', actual_lrp: lrp });
      await recordStartRequests(tx, desired, [req.index]);
      return lrp;
    });
  }

  async claimActualLRP(req: ClaimActualLRPRequest): Promise<ActualLRP> {
    return this.#ctx.mutate('claimActualLRP', async (tx) => {
      const before = await requireActual(tx, req, req.expected);
      assertActualLRPTransition(before.state, 'CLAIMED', actualLrpKey(req));
      if (before.state === 'CLAIMED') assertOwner(before, req.instance_key, 'claim');
      return replaceActual(tx, before, {
        ...before,
        state: 'CLAIMED',
        instance_guid: req.instance_key.instance_guid,
        cell_id: req.instance_key.cell_id,
        placement_error: '',
        since: before.state === 'CLAIMED' ? before.since : tx.now,
      });
    });
  }

  async claimActualLRPs(req: ClaimActualLRPsRequest): Promise<ClaimActualLRPsResult> {
    // Answered in key order, the order the rows are read and locked in.
    const claims = [...req.claims].sort((a, b) =>
      a.process_guid === b.process_guid ? a.index - b.index : a.process_guid < b.process_guid ? -1 : 1,
    );
    return this.#ctx.mutate('claimActualLRPs', async (tx) => {
      const records = await loadActualsForUpdate(tx, claims);
      const claimed: ActualLRP[] = [];
      const refused: ClaimRefusal[] = [];
      const changes: ActualChange[] = [];
      for (const claim of claims) {
        const ref = { process_guid: claim.process_guid, index: claim.index };
        const before = records.get(actualLrpKey(ref));
        const mine =
          before?.state === 'CLAIMED' &&
          before.instance_guid === claim.instance_guid &&
          before.cell_id === req.cell_id;
        if (mine) {
          claimed.push(before);
          continue;
        }
        if (before?.state !== 'UNCLAIMED') {
          refused.push({ ...ref, reason: claimRefusal(before), current: before ?? null });
          continue;
        }
        assertActualLRPTransition(before.state, 'CLAIMED', actualLrpKey(ref));
        const after: ActualLRP = {
          ...before,
          state: 'CLAIMED',
          instance_guid: claim.instance_guid,
          cell_id: req.cell_id,
          placement_error: '',
          since: tx.now,
          modification_tag: nextTag(before.modification_tag),
        };
        changes.push({ before, after });
        records.set(actualLrpKey(ref), after);
        claimed.push(after);
      }
      await replaceActuals(tx, changes);
      // In the order the claimed instances name them, read a chunk of LRPs per query: a cell
      // handed instances of a hundred LRPs claims them in one call.
      const guids = [...new Set(claimed.map((a) => a.process_guid))];
      const byGuid = await loadDesiredOfMany(tx, guids);
      const desired = guids.flatMap((guid) => byGuid.get(guid) ?? []);
      return { claimed, refused, desired_lrps: desired };
    });
  }

  async startActualLRP(req: StartActualLRPRequest): Promise<ActualLRP> {
    return this.#ctx.mutate('startActualLRP', (tx) => startIn(tx, req));
  }

  async startActualLRPs(req: StartActualLRPsRequest): Promise<StartActualLRPsResult> {
    return this.#ctx.mutate('startActualLRPs', async (tx) => {
      const records = await loadActualsForUpdate(tx, req.starts);
      const { results, changes } = decideEach(req.starts, records, (start, current) =>
        startedRecord(requireTag(current, 'ActualLRP', actualLrpKey(start), start.expected), start, tx.now),
      );
      await replaceActuals(tx, changes);
      // Each one newly running on its cell pins its LRP's named volumes there, as a single start.
      const volumes = new Map<string, Awaited<ReturnType<typeof loadDesiredVolumes>>>();
      for (const { before, after } of changes) {
        if (before.state === 'RUNNING') continue;
        if (!volumes.has(after.process_guid))
          volumes.set(after.process_guid, await loadDesiredVolumes(tx, after.process_guid));
        const desired = volumes.get(after.process_guid);
        if (desired?.volumes !== undefined) await recordVolumePins(tx, desired, after.index, after.cell_id);
      }
      return { results };
    });
  }

  async crashActualLRP(req: CrashActualLRPRequest): Promise<ActualLRP> {
    if (!Number.isInteger(req.crash_count) || req.crash_count < 0) {
      throw new InvalidArgumentError('crash_count must be a non-negative integer', { field: 'crash_count' });
    }
    return this.#ctx.mutate('crashActualLRP', async (tx) => {
      const crash = {
        crash_count: req.crash_count,
        last_crashed_at: req.last_crashed_at,
        crash_reason: req.crash_reason,
        instance_guid: '',
        cell_id: '',
        address: '',
        ports: [] as PortMapping[],
        state: req.state,
        since: tx.now,
      };
      let lrp: ActualLRP;
      if (req.expected === null) {
        const base = newUnclaimed(req.process_guid, req.index, await domainFor(tx, req), tx.now);
        lrp = await createActual(tx, { ...base, ...crash });
      } else {
        const before = await requireActual(tx, req, req.expected);
        assertActualLRPTransition(before.state, req.state, actualLrpKey(req));
        assertOwner(before, req.instance_key, 'crash');
        lrp = await replaceActual(tx, before, { ...before, ...crash, placement_error: '' });
        // It ran on that cell, monitor passed or not: its volumes' data is there now.
        if (before.cell_id !== '') await pinVolumes(tx, before);
      }
      if (lrp.state === 'UNCLAIMED') await requestStartIfDesired(tx, lrp);
      return lrp;
    });
  }

  async failActualLRP(req: FailActualLRPRequest): Promise<ActualLRP> {
    return this.#ctx.mutate('failActualLRP', async (tx) => {
      const before = await requireActual(tx, req, req.expected);
      if (req.instance_key && before.state === 'CLAIMED') {
        assertOwner(before, req.instance_key, 'fail');
        // Given back unplaceable: no start request (see FailActualLRPRequest.instance_key).
        return replaceActual(tx, before, {
          ...unclaimedRecord(before, tx.now),
          placement_error: req.placement_error,
        });
      }
      if (before.state !== 'UNCLAIMED') {
        throw new BerthError(
          'conflict',
          `Cannot fail placement of ActualLRP ${actualLrpKey(req)}: current state is ${before.state}, only UNCLAIMED instances (or CLAIMED ones by their claimant) can fail placement`,
          { kind: 'ActualLRP', id: actualLrpKey(req), current: before },
        );
      }
      return replaceActual(tx, before, { ...before, placement_error: req.placement_error });
    });
  }

  async unclaimActualLRP(req: CasActualLRPRequest): Promise<ActualLRP> {
    return this.#ctx.mutate('unclaimActualLRP', (tx) => unclaimIn(tx, req));
  }

  async unclaimActualLRPs(req: UnclaimActualLRPsRequest): Promise<UnclaimActualLRPsResult> {
    return this.#ctx.mutate('unclaimActualLRPs', async (tx) => {
      const records = await loadActualsForUpdate(tx, req.unclaims);
      const { results, changes } = decideEach(req.unclaims, records, (unclaim, current) =>
        unclaimedRecord(requireTag(current, 'ActualLRP', actualLrpKey(unclaim), unclaim.expected), tx.now),
      );
      await replaceActuals(tx, changes);
      // A start request for each index still desired, one write per LRP.
      const indicesByGuid = new Map<string, Set<number>>();
      for (const { after } of changes) {
        const indices = indicesByGuid.get(after.process_guid) ?? new Set<number>();
        indicesByGuid.set(after.process_guid, indices.add(after.index));
      }
      // A lost cell's instances belong to a hundred LRPs or more: their DesiredLRPs are read, and
      // their start requests written, a chunk at a time, not a round trip or two per LRP.
      const desiredByGuid = await loadDesiredOfMany(tx, [...indicesByGuid.keys()]);
      const wanted: { desired: DesiredLRP; indices: number[] }[] = [];
      for (const [processGuid, indices] of indicesByGuid) {
        const desired = desiredByGuid.get(processGuid);
        const stillWanted = desired ? [...indices].filter((index) => index < desired.instances) : [];
        if (desired && stillWanted.length > 0) wanted.push({ desired, indices: stillWanted });
      }
      await recordStartRequestsOfMany(tx, wanted);
      return { results };
    });
  }

  async removeActualLRP(req: RemoveActualLRPRequest): Promise<void> {
    await this.#ctx.mutate('removeActualLRP', async (tx) => {
      const before = await requireActual(tx, req, req.expected);
      if (req.instance_key) assertOwner(before, req.instance_key, 'remove');
      await deleteActual(tx, before);
    });
  }

  async retireActualLRP(req: CasActualLRPRequest): Promise<RetireActualLRPResult> {
    return this.#ctx.mutate('retireActualLRP', async (tx) => {
      const before = await requireActual(tx, req, req.expected);
      return retire(tx, before);
    });
  }

  async evacuateRunningActualLRP(req: EvacuateRunningActualLRPRequest): Promise<ActualLRPGroup> {
    return this.#ctx.mutate('evacuateRunningActualLRP', async (tx) => {
      const before = await requireActual(tx, req, req.expected);
      if (before.state !== 'RUNNING') {
        throw new BerthError(
          'conflict',
          `Cannot evacuate ActualLRP ${actualLrpKey(req)}: current state is ${before.state}, only RUNNING instances evacuate`,
          { kind: 'ActualLRP', id: actualLrpKey(req), current: before },
        );
      }
      assertOwner(before, req.instance_key, 'evacuate');
      const previous = await loadActual(tx, req, true, true);
      if (previous && previous.instance_guid !== req.instance_key.instance_guid) {
        throw new BerthError(
          'conflict',
          `Cannot evacuate ActualLRP ${actualLrpKey(req)}: instance ${previous.instance_guid} on ${previous.cell_id} is already evacuating`,
          { kind: 'ActualLRP', id: actualLrpKey(req), current: previous },
        );
      }
      const evacuating: ActualLRP = {
        ...before,
        evacuating: true,
        address: req.net_info.address,
        ports: req.net_info.ports,
        modification_tag: previous ? nextTag(previous.modification_tag) : { epoch: randomUUID(), index: 0 },
      };
      if (previous) await replaceActual(tx, previous, evacuating);
      else await createActual(tx, evacuating);
      const instance = await replaceActual(tx, before, {
        ...before,
        state: 'UNCLAIMED',
        instance_guid: '',
        cell_id: '',
        address: '',
        ports: [],
        since: tx.now,
      });
      await requestStartIfDesired(tx, instance);
      return { instance, evacuating };
    });
  }

  async removeEvacuatingActualLRP(req: RemoveEvacuatingActualLRPRequest): Promise<void> {
    await this.#ctx.mutate('removeEvacuatingActualLRP', async (tx) => {
      const before = requireTag(
        await loadActual(tx, req, true, this.#ctx.lockRows),
        'evacuating ActualLRP',
        actualLrpKey(req),
        req.expected,
      );
      assertOwner(before, req.instance_key, 'remove the evacuating copy of');
      await deleteActual(tx, before);
    });
  }
}

/**
 * A batch's items decided one by one on records read together: each decision sees the records as
 * the items before it left them. A refusal (a lost CAS, a rule: a BerthError) is that item's answer
 * and the others still land; anything else fails the whole transaction.
 */
function decideEach<T extends ActualLRPRef>(
  items: readonly T[],
  records: Map<string, ActualLRP>,
  decide: (item: T, current: ActualLRP | undefined) => ActualLRP,
): { results: StartResult[]; changes: ActualChange[] } {
  const results: StartResult[] = [];
  const changes: ActualChange[] = [];
  for (const item of items) {
    const key = actualLrpKey(item);
    const before = records.get(key);
    try {
      const after = decide(item, before);
      changes.push({ before: before as ActualLRP, after });
      records.set(key, after);
      results.push({ actual_lrp: after });
    } catch (err) {
      if (!isBerthError(err)) throw err;
      const current = err.details.current;
      results.push({
        error: { code: err.code, message: err.message, ...(current !== undefined ? { current } : {}) },
      });
    }
  }
  return { results, changes };
}

/** Seed 002's unclaim: UNCLAIMED again, its placement cleared. */
function unclaimedRecord(before: ActualLRP, now: string): ActualLRP {
  assertActualLRPTransition(before.state, 'UNCLAIMED', actualLrpKey(before));
  return {
    ...before,
    state: 'UNCLAIMED',
    instance_guid: '',
    cell_id: '',
    address: '',
    ports: [],
    placement_error: '',
    since: now,
    modification_tag: nextTag(before.modification_tag),
  };
}

/** UNCLAIMED again, and a start request if it is still desired. */
async function unclaimIn(tx: Tx, req: CasActualLRPRequest): Promise<ActualLRP> {
  const before = await requireActual(tx, req, req.expected);
  const after = await replaceActual(tx, before, unclaimedRecord(before, tx.now));
  await requestStartIfDesired(tx, after);
  return after;
}

/** Seed 002's start of a claimed (or its own running) instance: RUNNING with net info. */
function startedRecord(before: ActualLRP, req: StartActualLRPRequest, now: string): ActualLRP {
  assertActualLRPTransition(before.state, 'RUNNING', actualLrpKey(req));
  // RUNNING on another cell stays theirs (seed: "RUNNING on O" → the rep deletes its container).
  if (before.state === 'RUNNING') assertOwner(before, req.instance_key, 'start');
  return {
    ...before,
    state: 'RUNNING',
    instance_guid: req.instance_key.instance_guid,
    cell_id: req.instance_key.cell_id,
    address: req.net_info.address,
    ports: req.net_info.ports,
    placement_error: '',
    since: before.state === 'RUNNING' ? before.since : now,
    modification_tag: nextTag(before.modification_tag),
  };
}

/** Seed 002's start: RUNNING with net info, or created RUNNING when `expected` is null. */
async function startIn(tx: Tx, req: StartActualLRPRequest): Promise<ActualLRP> {
  if (req.expected === null) {
    const lrp: ActualLRP = {
      ...newUnclaimed(req.process_guid, req.index, await domainFor(tx, req), tx.now),
      state: 'RUNNING',
      instance_guid: req.instance_key.instance_guid,
      cell_id: req.instance_key.cell_id,
      address: req.net_info.address,
      ports: req.net_info.ports,
    };
    await pinVolumes(tx, lrp);
    return createActual(tx, lrp);
  }
  const before = await requireActual(tx, req, req.expected);
  const after = await replaceActual(tx, before, startedRecord(before, req, tx.now));
  if (before.state !== 'RUNNING') await pinVolumes(tx, after);
  return after;
}

/**
 * An instance that ran on a cell (it started RUNNING, or crashed there) pins its named volumes, if
 * its DesiredLRP has any, to that cell.
 */
async function pinVolumes(tx: Tx, lrp: ActualLRP): Promise<void> {
  const desired = await loadDesiredVolumes(tx, lrp.process_guid);
  if (desired?.volumes !== undefined) await recordVolumePins(tx, desired, lrp.index, lrp.cell_id);
}

function claimRefusal(current: ActualLRP | undefined): string {
  if (!current) return 'it does not exist';
  const where = current.cell_id ? ` on cell ${current.cell_id}` : '';
  return `it is ${current.state}${where}, not UNCLAIMED`;
}
