/**
 * Many ActualLRP records read, and written, in one statement each: what the batch operations
 * (claimActualLRPs, startActualLRPs, unclaimActualLRPs) are made of. Item by item, a batch of ten
 * was ten reads and ten updates, and on PostgreSQL each is a round trip that waits for a turn of
 * the server's event loop: in a burst, with the loop busy, a claim of ten instances held its
 * connection for 50–100 ms, and the pool's ten connections bounded the whole cluster's claims and
 * starts (docs/performance.md, round 12). Read in one statement and decided in memory, a batch is
 * a fixed number of round trips whatever its size.
 *
 * The rows are read FOR UPDATE on PostgreSQL (SQLite's writer lock already holds them), so what is
 * decided on is what the update replaces; the update still names each row's old tag, and a count
 * that differs fails the whole transaction as a lost CAS.
 */
import { CompiledQuery } from 'kysely';
import { numbered, type ValuesUpdate, valuesUpdate } from '../../db/index.js';
import { actualLrpKey } from '../actual-lrp-key.js';
import type { ActualLRPRef } from '../bbs-store.js';
import type { ActualLRP } from '../bbs-types.js';
import { CasConflictError } from '../cas-conflict-error.js';
import type { ActualLrpRow } from './bbs-database.js';
import { actualColumns } from './hot-statements.js';
import { actualToRow, rowToActual } from './row-mapping.js';
import type { Tx } from './store-context.js';

/** Keys per statement: an OR of this many index lookups plans in well under a millisecond. */
const keysPerStatement = 200;

/**
 * The non-evacuating records of `refs` that exist, by actualLrpKey, locked for this transaction.
 * Read in key order, so two batches that overlap lock their rows in the same order.
 */
export async function loadActualsForUpdate(
  tx: Tx,
  refs: readonly ActualLRPRef[],
): Promise<Map<string, ActualLRP>> {
  const keys = new Map<string, ActualLRPRef>();
  for (const ref of refs) keys.set(actualLrpKey(ref), ref);
  const sorted = [...keys.values()].sort((a, b) =>
    a.process_guid === b.process_guid ? a.index - b.index : a.process_guid < b.process_guid ? -1 : 1,
  );
  const found = new Map<string, ActualLRP>();
  for (let at = 0; at < sorted.length; at += keysPerStatement) {
    const chunk = sorted.slice(at, at + keysPerStatement);
    const where = chunk.map(() => '(process_guid = ? AND idx = ?)').join(' OR ');
    const text =
      `SELECT ${actualColumns} FROM actual_lrps WHERE evacuating = 0 AND (${where}) ` +
      `ORDER BY process_guid, idx${tx.lockRows ? ' FOR UPDATE' : ''}`;
    const params = chunk.flatMap((ref) => [ref.process_guid, ref.index]);
    const result = await tx.db.executeQuery<ActualLrpRow>(
      CompiledQuery.raw(tx.kind === 'postgres' ? numbered(text) : text, params),
    );
    for (const row of result.rows) {
      const lrp = rowToActual(row);
      found.set(actualLrpKey(lrp), lrp);
    }
  }
  return found;
}

/** One record's write in a batch: the record as read, and what it becomes. */
export interface ActualChange {
  readonly before: ActualLRP;
  readonly after: ActualLRP;
}

/** Columns an update sets. */
const setColumns = [
  'domain',
  'instance_guid',
  'cell_id',
  'state',
  'crash_count',
  'last_crashed_at',
  'crash_reason',
  'since',
  'placement_error',
  'address',
  'ports',
  'tag_epoch',
  'tag_index',
];

/**
 * Each change's row is its key, the old tag it replaces and its new values: the update matches
 * the old tag, so a row changed since it was read is not written (the count tells).
 */
const actualsUpdate: ValuesUpdate = {
  table: 'actual_lrps',
  columns: ['process_guid', 'idx', 'evacuating', 'old_epoch', 'old_index', ...setColumns],
  types: {
    idx: 'integer',
    evacuating: 'integer',
    old_index: 'integer',
    crash_count: 'integer',
    tag_index: 'integer',
  },
  set: setColumns,
  match: [
    ['process_guid', 'process_guid'],
    ['idx', 'idx'],
    ['evacuating', 'evacuating'],
    ['tag_epoch', 'old_epoch'],
    ['tag_index', 'old_index'],
  ],
};

/**
 * Writes every change in one UPDATE per chunk and records one `actual_lrp_changed` event each, in
 * order. A record changed twice in one batch is written once, from its first `before` to its last
 * `after`, with both events.
 */
export async function replaceActuals(tx: Tx, changes: readonly ActualChange[]): Promise<void> {
  const rows = new Map<string, ActualChange>();
  for (const change of changes) {
    const key = actualLrpKey(change.before);
    const earlier = rows.get(key);
    rows.set(key, { before: earlier?.before ?? change.before, after: change.after });
  }
  const merged = [...rows.values()];
  for (let at = 0; at < merged.length; at += keysPerStatement) {
    const chunk = merged.slice(at, at + keysPerStatement);
    const updated = await tx.db.executeQuery(updateStatement(tx.kind, chunk));
    const count = Number(updated.numAffectedRows ?? 0n);
    if (count !== chunk.length) {
      // The rows were read (and on PostgreSQL locked) in this transaction: only a bug gets here.
      const first = chunk[0] as ActualChange;
      throw new CasConflictError(
        'ActualLRP',
        actualLrpKey(first.before),
        first.before.modification_tag,
        null,
      );
    }
  }
  for (const { before, after } of changes) tx.events.push({ type: 'actual_lrp_changed', before, after });
}

function updateStatement(kind: Tx['kind'], chunk: readonly ActualChange[]): CompiledQuery {
  return valuesUpdate(
    kind,
    actualsUpdate,
    chunk.map(({ before, after }) => ({
      ...actualToRow(after),
      old_epoch: before.modification_tag.epoch,
      old_index: before.modification_tag.index,
    })),
  );
}
