import { InvalidArgumentError } from '../../core/index.js';
import type { DesiredLRPDefinition, DesiredLRPFilter } from '../bbs-store.js';
import type { DesiredLRP, ModificationTag } from '../bbs-types.js';
import { validateInstances } from '../definition-defaults.js';
import { rowToDesired } from './row-mapping.js';
import { type Db, insertChunk, type Reader, requireTag, type Tx } from './store-context.js';

/** DesiredLRP rows as the other resources read them (start requests, evacuation, scaling). */
export async function loadDesired(
  reader: Reader,
  processGuid: string,
  lock: boolean,
): Promise<DesiredLRP | undefined> {
  let query = reader.db.selectFrom('desired_lrps').selectAll().where('process_guid', '=', processGuid);
  if (lock && reader.lockRows) query = query.forUpdate();
  const row = await query.executeTakeFirst();
  return row ? rowToDesired(row) : undefined;
}

/** The DesiredLRPs of `processGuids` that exist (unlocked), a chunk of guids per query. */
export async function loadDesiredOfMany(
  reader: Reader,
  processGuids: readonly string[],
): Promise<Map<string, DesiredLRP>> {
  const found = new Map<string, DesiredLRP>();
  for (let i = 0; i < processGuids.length; i += insertChunk) {
    const rows = await reader.db
      .selectFrom('desired_lrps')
      .selectAll()
      .where('process_guid', 'in', processGuids.slice(i, i + insertChunk))
      .execute();
    for (const row of rows) found.set(row.process_guid, rowToDesired(row));
  }
  return found;
}

/** The DesiredLRP a mutation decides on, locked, checked against the caller's tag when given. */
export async function requireDesired(
  tx: Tx,
  processGuid: string,
  expected: ModificationTag | undefined,
): Promise<DesiredLRP> {
  return requireTag(await loadDesired(tx, processGuid, true), 'DesiredLRP', processGuid, expected);
}

export async function listDesired(db: Db, filter: DesiredLRPFilter): Promise<DesiredLRP[]> {
  let query = db.selectFrom('desired_lrps').selectAll().orderBy('process_guid');
  if (filter.domain !== undefined) query = query.where('domain', '=', filter.domain);
  if (filter.after !== undefined) query = query.where('process_guid', '>', filter.after);
  if (filter.limit !== undefined) query = query.limit(filter.limit);
  return (await query.execute()).map(rowToDesired);
}

export function validateDesired(req: DesiredLRPDefinition): void {
  if (!req.process_guid)
    throw new InvalidArgumentError('process_guid must not be empty', { field: 'process_guid' });
  if (!req.domain) throw new InvalidArgumentError('domain must not be empty', { field: 'domain' });
  if (!req.image) throw new InvalidArgumentError('image must not be empty', { field: 'image' });
  validateInstances(req.instances);
}
