import { randomUUID } from 'node:crypto';
import { BerthError, NotFoundError } from '../../core/index.js';
import type {
  DesiredLRPDefinition,
  DesiredLRPFilter,
  ProcessGuidRequest,
  RemoveDesiredLRPRequest,
  UpdateDesiredLRPRequest,
} from '../bbs-store.js';
import type { ActualLRP, DesiredLRP, ModificationTag } from '../bbs-types.js';
import { desiredWithDefaults, validateInstances, validateRoutes } from '../definition-defaults.js';
import { normalizeRoutes } from '../http-routes.js';
import { loadActualsOf, retire } from './actual-lrp-records.js';
import { listDesired, loadDesired, requireDesired, validateDesired } from './desired-lrp-records.js';
import { recordStartRequests } from './request-outbox.js';
import { actualToRow, desiredToRow, newUnclaimed, readAllDesired } from './row-mapping.js';
import {
  type CasTarget,
  casWrite,
  insertChunk,
  nextTag,
  type StoreContext,
  stripUndefined,
  type Tx,
  validatePage,
} from './store-context.js';

/**
 * DesiredLRPs, and seed 002's ∆ that every change of one applies in the same transaction: the
 * ActualLRPs and start requests of the indices it desires, the retirement of those it no longer does.
 */
export class DesiredLrpStore {
  readonly #ctx: StoreContext;

  constructor(ctx: StoreContext) {
    this.#ctx = ctx;
  }

  async desireLRP(given: DesiredLRPDefinition): Promise<DesiredLRP> {
    const req = desiredWithDefaults(given);
    validateDesired(req);
    return this.#ctx.mutate('desireLRP', async (tx) => {
      const desired: DesiredLRP = {
        ...stripUndefined(req),
        created_at: tx.now,
        modification_tag: { epoch: randomUUID(), index: 0 },
      };
      // The insert is the existence check (one round trip fewer on PostgreSQL than reading first);
      // DO NOTHING rather than a unique violation, which would abort a PostgreSQL transaction.
      const inserted = await tx.db
        .insertInto('desired_lrps')
        .values(desiredToRow(desired))
        .onConflict((conflict) => conflict.column('process_guid').doNothing())
        .executeTakeFirst();
      if (Number(inserted.numInsertedOrUpdatedRows ?? 0n) === 0) {
        const existing = await loadDesired(tx, req.process_guid, false);
        throw new BerthError('already_exists', `Cannot desire LRP "${req.process_guid}": it already exists`, {
          kind: 'DesiredLRP',
          id: req.process_guid,
          ...(existing ? { current: existing } : {}),
        });
      }
      tx.events.push({ type: 'desired_lrp_created', desired_lrp: desired });
      // Removing a DesiredLRP deleted every start request of its guid, so a new one has none left
      // over at or above its instance count to delete.
      await this.#reconcileIndices(tx, desired, { fresh: true });
      return desired;
    });
  }

  async getDesiredLRP(req: ProcessGuidRequest): Promise<DesiredLRP> {
    const desired = await loadDesired(this.#ctx, req.process_guid, false);
    if (!desired) throw new NotFoundError('DesiredLRP', req.process_guid);
    return desired;
  }

  async listDesiredLRPs(req: DesiredLRPFilter = {}): Promise<DesiredLRP[]> {
    validatePage(req);
    if (req.domain === undefined && req.limit === undefined && req.after === undefined)
      return this.#ctx.backend.readRows(readAllDesired);
    return listDesired(this.#ctx.db, req);
  }

  async updateDesiredLRP(req: UpdateDesiredLRPRequest): Promise<DesiredLRP> {
    const { update } = req;
    if (update.instances !== undefined) validateInstances(update.instances);
    const routes = update.routes !== undefined ? normalizeRoutes(update.routes) : undefined;
    if (routes !== undefined) validateRoutes(routes);
    return this.#ctx.mutate('updateDesiredLRP', async (tx) => {
      const before = await requireDesired(tx, req.process_guid, req.expected);
      // The ports are the stored LRP's: a route may only name one it exposes.
      if (routes !== undefined) validateRoutes(routes, before.ports);
      const after: DesiredLRP = {
        ...before,
        ...(update.instances !== undefined ? { instances: update.instances } : {}),
        ...(routes !== undefined ? { routes } : {}),
        ...(update.annotation !== undefined ? { annotation: update.annotation } : {}),
        modification_tag: nextTag(before.modification_tag),
      };
      await casWrite(
        async () => {
          const result = await tx.db
            .updateTable('desired_lrps')
            .set({
              instances: after.instances,
              routes: JSON.stringify(after.routes),
              annotation: after.annotation,
              tag_index: after.modification_tag.index,
            })
            .where('process_guid', '=', before.process_guid)
            .where('tag_epoch', '=', before.modification_tag.epoch)
            .where('tag_index', '=', before.modification_tag.index)
            .executeTakeFirst();
          return result.numUpdatedRows;
        },
        desiredCasTarget(tx, before, req.expected),
      );
      tx.events.push({ type: 'desired_lrp_changed', before, after });
      if (after.instances !== before.instances) await this.#reconcileIndices(tx, after);
      return after;
    });
  }

  async removeDesiredLRP(req: RemoveDesiredLRPRequest): Promise<void> {
    await this.#ctx.mutate('removeDesiredLRP', async (tx) => {
      const before = await requireDesired(tx, req.process_guid, req.expected);
      await casWrite(
        async () => {
          const result = await tx.db
            .deleteFrom('desired_lrps')
            .where('process_guid', '=', before.process_guid)
            .where('tag_epoch', '=', before.modification_tag.epoch)
            .where('tag_index', '=', before.modification_tag.index)
            .executeTakeFirst();
          return result.numDeletedRows;
        },
        desiredCasTarget(tx, before, req.expected),
      );
      tx.events.push({ type: 'desired_lrp_removed', desired_lrp: before });
      await this.#reconcileIndices(tx, { ...before, instances: 0 });
    });
  }

  /**
   * Seed 002's ∆ for one DesiredLRP, applied inside the caller's transaction: every missing index
   * below `instances` gets an UNCLAIMED ActualLRP and a start request; every index at or above it
   * is retired (UNCLAIMED/CRASHED deleted, CLAIMED/RUNNING asked to stop on their cell).
   */
  async #reconcileIndices(tx: Tx, desired: DesiredLRP, options: { fresh?: boolean } = {}): Promise<void> {
    const actuals = await loadActualsOf(tx, desired.process_guid, true);
    const present = new Set<number>();
    const unstarted: ActualLRP[] = [];
    for (const lrp of actuals) {
      if (lrp.evacuating) continue;
      present.add(lrp.index);
      if (lrp.index < desired.instances) continue;
      if (lrp.state === 'UNCLAIMED' || lrp.state === 'CRASHED') unstarted.push(lrp);
      else await retire(tx, lrp);
    }
    await this.#deleteUnstarted(tx, desired, unstarted);
    const missing: number[] = [];
    for (let index = 0; index < desired.instances; index++) if (!present.has(index)) missing.push(index);
    if (missing.length > 0) {
      const created = missing.map((index) =>
        newUnclaimed(desired.process_guid, index, desired.domain, tx.now),
      );
      for (let i = 0; i < created.length; i += insertChunk) {
        await tx.db
          .insertInto('actual_lrps')
          .values(created.slice(i, i + insertChunk).map(actualToRow))
          .execute();
      }
      for (const lrp of created) tx.events.push({ type: 'actual_lrp_created', actual_lrp: lrp });
      await recordStartRequests(tx, desired, missing);
    }
    // A start request for an index that is no longer desired must not reach the auctioneer.
    if (options.fresh) return;
    await tx.db
      .deleteFrom('start_requests')
      .where('kind', '=', 'lrp')
      .where('guid', '=', desired.process_guid)
      .where('idx', '>=', desired.instances)
      .execute();
  }

  /**
   * Retires the UNCLAIMED and CRASHED instances at or above `instances` in one statement (their
   * start requests go in the statement after the caller's loop): one row at a time, scaling 10,000
   * instances down took 6 s on SQLite and 14 s on PostgreSQL. The rows were read, and on
   * PostgreSQL locked, in this transaction, so the count deleted must be the count read.
   */
  async #deleteUnstarted(tx: Tx, desired: DesiredLRP, lrps: readonly ActualLRP[]): Promise<void> {
    if (lrps.length === 0) return;
    const result = await tx.db
      .deleteFrom('actual_lrps')
      .where('process_guid', '=', desired.process_guid)
      .where('evacuating', '=', 0)
      .where('idx', '>=', desired.instances)
      .where('state', 'in', ['UNCLAIMED', 'CRASHED'])
      .executeTakeFirst();
    if (result.numDeletedRows !== BigInt(lrps.length)) {
      throw new BerthError(
        'conflict',
        `ActualLRPs of "${desired.process_guid}" changed while being retired`,
        {
          kind: 'ActualLRP',
          id: desired.process_guid,
        },
      );
    }
    for (const lrp of lrps) tx.events.push({ type: 'actual_lrp_removed', actual_lrp: lrp });
  }
}

/** A lost DesiredLRP CAS reports the caller's tag (none for an unconditional change), as ever. */
function desiredCasTarget(
  tx: Tx,
  before: DesiredLRP,
  expected: ModificationTag | undefined,
): CasTarget<DesiredLRP> {
  return {
    kind: 'DesiredLRP',
    id: before.process_guid,
    expected: expected ?? null,
    reload: () => loadDesired(tx, before.process_guid, false),
  };
}
