import { CompiledQuery } from 'kysely';
import { BerthError, InvalidArgumentError } from '../../core/index.js';
import { actualLrpKey } from '../actual-lrp-key.js';
import type { ActualLRPFilter, ActualLRPRef, LRPStopRequest, RetireActualLRPResult } from '../bbs-store.js';
import type { ActualLRP, ActualLRPInstanceKey, ModificationTag } from '../bbs-types.js';
import { CasConflictError } from '../cas-conflict-error.js';
import type { ActualLrpRow } from './bbs-database.js';
import { loadDesired } from './desired-lrp-records.js';
import { recordStop } from './request-outbox.js';
import { actualToRow, rowToActual } from './row-mapping.js';
import {
  type CasTarget,
  casWrite,
  type Db,
  nextTag,
  type Reader,
  requireTag,
  type Tx,
} from './store-context.js';

/*
 * ActualLRP rows as every mutation touches them: read (locked on PostgreSQL), created, replaced
 * and deleted with a CAS on their tag, retired. Shared by the ActualLRP actions and the
 * DesiredLRP scaling that creates and retires instances.
 */

export async function loadActual(
  reader: Reader,
  ref: ActualLRPRef,
  evacuating: boolean,
  lock: boolean,
): Promise<ActualLRP | undefined> {
  const text = lock ? reader.sql.selectActualForUpdate : reader.sql.selectActual;
  const result = await reader.db.executeQuery<ActualLrpRow>(
    CompiledQuery.raw(text, [ref.process_guid, ref.index, evacuating ? 1 : 0]),
  );
  const row = result.rows[0];
  return row ? rowToActual(row) : undefined;
}

export async function loadActualsOf(
  reader: Reader,
  processGuid: string,
  lock: boolean,
): Promise<ActualLRP[]> {
  let query = reader.db
    .selectFrom('actual_lrps')
    .selectAll()
    .where('process_guid', '=', processGuid)
    .orderBy('idx')
    .orderBy('evacuating');
  if (lock && reader.lockRows) query = query.forUpdate();
  return (await query.execute()).map(rowToActual);
}

export async function requireActual(
  tx: Tx,
  ref: ActualLRPRef,
  expected: ModificationTag,
): Promise<ActualLRP> {
  return requireTag(await loadActual(tx, ref, false, true), 'ActualLRP', actualLrpKey(ref), expected);
}

export async function domainFor(tx: Tx, req: ActualLRPRef & { readonly domain?: string }): Promise<string> {
  if (req.domain) return req.domain;
  const desired = await loadDesired(tx, req.process_guid, false);
  if (desired) return desired.domain;
  throw new InvalidArgumentError(
    `Cannot create ActualLRP ${actualLrpKey(req)}: give its domain (no DesiredLRP "${req.process_guid}" to take it from)`,
    { field: 'domain' },
  );
}

export async function createActual(tx: Tx, lrp: ActualLRP): Promise<ActualLRP> {
  const existing = await loadActual(tx, lrp, lrp.evacuating, true);
  if (existing) throw new CasConflictError('ActualLRP', actualLrpKey(lrp), null, existing);
  try {
    await tx.db.insertInto('actual_lrps').values(actualToRow(lrp)).execute();
  } catch (err) {
    if (!tx.isUniqueViolation(err)) throw err;
    const current = await loadActual(tx, lrp, lrp.evacuating, false);
    throw new CasConflictError('ActualLRP', actualLrpKey(lrp), null, current ?? null);
  }
  tx.events.push({ type: 'actual_lrp_created', actual_lrp: lrp });
  return lrp;
}

/** The conditional UPDATE is the CAS itself; the read before it only decided what to write. */
export async function replaceActual(tx: Tx, before: ActualLRP, changes: ActualLRP): Promise<ActualLRP> {
  const after: ActualLRP = {
    ...changes,
    modification_tag:
      changes.modification_tag === before.modification_tag
        ? nextTag(before.modification_tag)
        : changes.modification_tag,
  };
  const r = actualToRow(after);
  const update = CompiledQuery.raw(tx.sql.updateActual, [
    r.domain,
    r.instance_guid,
    r.cell_id,
    r.state,
    r.crash_count,
    r.last_crashed_at,
    r.crash_reason,
    r.since,
    r.placement_error,
    r.address,
    r.ports,
    r.tag_epoch,
    r.tag_index,
    r.process_guid,
    r.idx,
    r.evacuating,
    before.modification_tag.epoch,
    before.modification_tag.index,
  ]);
  await casWrite(
    async () => (await tx.db.executeQuery(update)).numAffectedRows ?? 0n,
    actualCasTarget(tx, before),
  );
  tx.events.push({ type: 'actual_lrp_changed', before, after });
  return after;
}

export async function deleteActual(tx: Tx, lrp: ActualLRP): Promise<void> {
  await casWrite(
    async () => {
      const result = await tx.db
        .deleteFrom('actual_lrps')
        .where('process_guid', '=', lrp.process_guid)
        .where('idx', '=', lrp.index)
        .where('evacuating', '=', lrp.evacuating ? 1 : 0)
        .where('tag_epoch', '=', lrp.modification_tag.epoch)
        .where('tag_index', '=', lrp.modification_tag.index)
        .executeTakeFirst();
      return result.numDeletedRows;
    },
    actualCasTarget(tx, lrp),
  );
  tx.events.push({ type: 'actual_lrp_removed', actual_lrp: lrp });
}

/** A CAS on the copy `lrp` names (instance or evacuating), decided on its tag. */
function actualCasTarget(tx: Tx, lrp: ActualLRP): CasTarget<ActualLRP> {
  return {
    kind: 'ActualLRP',
    id: actualLrpKey(lrp),
    expected: lrp.modification_tag,
    reload: () => loadActual(tx, lrp, lrp.evacuating, false),
  };
}

export async function retire(tx: Tx, lrp: ActualLRP): Promise<RetireActualLRPResult> {
  if (lrp.state === 'UNCLAIMED' || lrp.state === 'CRASHED') {
    await deleteActual(tx, lrp);
    await tx.db
      .deleteFrom('start_requests')
      .where('kind', '=', 'lrp')
      .where('guid', '=', lrp.process_guid)
      .where('idx', '=', lrp.index)
      .execute();
    return { removed: true, stop_request: null };
  }
  const stop: LRPStopRequest = {
    process_guid: lrp.process_guid,
    index: lrp.index,
    instance_guid: lrp.instance_guid,
    cell_id: lrp.cell_id,
  };
  await recordStop(tx, 'lrp', stop);
  return { removed: false, stop_request: stop };
}

export function assertOwner(lrp: ActualLRP, key: ActualLRPInstanceKey, action: string): void {
  if (lrp.cell_id !== key.cell_id || lrp.instance_guid !== key.instance_guid) {
    throw new BerthError(
      'conflict',
      `Cannot ${action} ActualLRP ${actualLrpKey(lrp)} as instance ${key.instance_guid} on cell "${key.cell_id}": it is ${lrp.state}${lrp.cell_id ? ` as instance ${lrp.instance_guid} on cell "${lrp.cell_id}"` : ''}`,
      { kind: 'ActualLRP', id: actualLrpKey(lrp), current: lrp },
    );
  }
}

export async function listActual(db: Db, filter: ActualLRPFilter): Promise<ActualLRP[]> {
  let query = db.selectFrom('actual_lrps').selectAll();
  if (filter.process_guid !== undefined) query = query.where('process_guid', '=', filter.process_guid);
  if (filter.domain !== undefined) query = query.where('domain', '=', filter.domain);
  if (filter.cell_id !== undefined) query = query.where('cell_id', '=', filter.cell_id);
  const after = filter.after;
  if (after !== undefined) {
    // Keyset: strictly after (process_guid, idx, evacuating), the primary key's order. A row-value
    // comparison, which both databases answer with a seek on the key (an OR of the three cases
    // makes SQLite scan the table from its start on every page).
    query = query.where((eb) =>
      eb(
        eb.refTuple('process_guid', 'idx', 'evacuating'),
        '>',
        eb.tuple(after.process_guid, after.index, after.evacuating ? 1 : 0),
      ),
    );
  }
  if (filter.limit !== undefined) query = query.limit(filter.limit);
  const rows = await query.orderBy('process_guid').orderBy('idx').orderBy('evacuating').execute();
  return rows.map(rowToActual);
}
