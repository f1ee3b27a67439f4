import { CompiledQuery } from 'kysely';
import type { ReleaseVolumePinsRequest, VolumePin, VolumePinFilter } from '../bbs-store.js';
import type { DesiredLRP } from '../bbs-types.js';
import { namedVolumes, type VolumeMount } from '../volume-mounts.js';
import type { Reader, StoreContext, Tx } from './store-context.js';

/**
 * Diego's local volumes, as berth keeps them: once an instance with named volumes ran on a cell,
 * that cell holds its data, and the instance (any version of its DesiredLRP in the same domain,
 * at the same index) is started there again and only there. The pin is written when the instance
 * first turns RUNNING and outlives the DesiredLRP, as the data on the cell does; only an operator
 * removes it (`releaseVolumePins`), accepting a fresh volume elsewhere.
 */

/** A DesiredLRP's domain and volumes, read by a constant statement (hot-statements.ts). */
export async function loadDesiredVolumes(
  reader: Reader,
  processGuid: string,
): Promise<Pick<DesiredLRP, 'domain' | 'volumes'> | undefined> {
  const result = await reader.db.executeQuery<{ domain: string; volumes: string | null }>(
    CompiledQuery.raw(reader.sql.selectDesiredVolumes, [processGuid]),
  );
  const row = result.rows[0];
  if (!row) return undefined;
  if (row.volumes === null) return { domain: row.domain };
  return { domain: row.domain, volumes: JSON.parse(row.volumes) as readonly VolumeMount[] };
}

/** Pins each named volume of `desired` at `index` to `cellId`, unless pinned already. */
export async function recordVolumePins(
  tx: Tx,
  desired: Pick<DesiredLRP, 'domain' | 'volumes'>,
  index: number,
  cellId: string,
): Promise<void> {
  const names = namedVolumes(desired.volumes);
  if (names.length === 0 || cellId === '') return;
  await tx.db
    .insertInto('volume_pins')
    .values(
      names.map((volume) => ({
        domain: desired.domain,
        volume,
        idx: index,
        cell_id: cellId,
        created_at: tx.now,
      })),
    )
    .onConflict((oc) => oc.columns(['domain', 'volume', 'idx']).doNothing())
    .execute();
}

/**
 * The cell each of `indices` is pinned to by the named volumes of `desired` (the first volume's
 * pin when, after a partial release, they disagree); indices without a pin are absent.
 */
export async function pinnedCells(
  reader: Reader,
  desired: DesiredLRP,
  indices: readonly number[],
): Promise<Map<number, string>> {
  const names = namedVolumes(desired.volumes);
  const pins = new Map<number, string>();
  if (names.length === 0 || indices.length === 0) return pins;
  const rows = await reader.db
    .selectFrom('volume_pins')
    .select(['volume', 'idx', 'cell_id'])
    .where('domain', '=', desired.domain)
    .where('volume', 'in', names)
    .execute();
  const wanted = new Set(indices);
  for (const name of names)
    for (const row of rows)
      if (row.volume === name && wanted.has(row.idx) && !pins.has(row.idx)) pins.set(row.idx, row.cell_id);
  return pins;
}

/** The pins as the API lists and an operator releases them. */
export class VolumePinStore {
  readonly #ctx: StoreContext;

  constructor(ctx: StoreContext) {
    this.#ctx = ctx;
  }

  async listVolumePins(req: VolumePinFilter = {}): Promise<VolumePin[]> {
    let query = this.#ctx.db.selectFrom('volume_pins').selectAll();
    if (req.domain !== undefined) query = query.where('domain', '=', req.domain);
    if (req.cell_id !== undefined) query = query.where('cell_id', '=', req.cell_id);
    const rows = await query.orderBy('domain').orderBy('volume').orderBy('idx').execute();
    return rows.map((r) => ({
      domain: r.domain,
      volume: r.volume,
      index: Number(r.idx),
      cell_id: r.cell_id,
      created_at: r.created_at,
    }));
  }

  /**
   * Drops pins: an instance waiting for its gone cell is placed anywhere at its next start (the
   * converger re-emits a waiting instance's start), with fresh volumes there.
   */
  async releaseVolumePins(req: ReleaseVolumePinsRequest): Promise<{ released: number }> {
    return this.#ctx.mutate('releaseVolumePins', async (tx) => {
      let query = tx.db.deleteFrom('volume_pins').where('domain', '=', req.domain);
      if (req.volume !== undefined) query = query.where('volume', '=', req.volume);
      if (req.index !== undefined) query = query.where('idx', '=', req.index);
      const result = await query.executeTakeFirst();
      return { released: Number(result.numDeletedRows) };
    });
  }
}
