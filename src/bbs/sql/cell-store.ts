import { InvalidArgumentError } from '../../core/index.js';
import type { CellIdRequest, HeartbeatCellRequest } from '../bbs-store.js';
import type { CellPresence } from '../bbs-types.js';
import type { Db, StoreContext } from './store-context.js';

/**
 * The in-process news (`SqlBbsStore.onEvents`, never a stored event) of a cell whose presence
 * began: new, or back after it expired.
 */
export const cellAppearedNews = 'cell_appeared';

/** Cell presences: a cell is live while its heartbeats keep its `expires_at` ahead of the clock. */
export class CellStore {
  readonly #ctx: StoreContext;

  constructor(ctx: StoreContext) {
    this.#ctx = ctx;
  }

  async heartbeatCell(req: HeartbeatCellRequest): Promise<CellPresence> {
    if (!req.presence.cell_id)
      throw new InvalidArgumentError('cell_id must not be empty', { field: 'cell_id' });
    let appeared = false;
    const result = await this.#ctx.mutate('heartbeatCell', async (tx) => {
      // A cell new, or back after its presence expired: placements waiting for room are retried now.
      const before = await tx.db
        .selectFrom('cells')
        .select('expires_at')
        .where('cell_id', '=', req.presence.cell_id)
        .executeTakeFirst();
      appeared = before === undefined || before.expires_at <= tx.now;
      const presence: CellPresence = {
        ...req.presence,
        expires_at: new Date(tx.nowMs + req.ttl_ms).toISOString(),
      };
      const row = {
        zone: presence.zone,
        capacity: JSON.stringify(presence.capacity),
        rep_url: presence.rep_url,
        placement_tags: JSON.stringify(presence.placement_tags),
        expires_at: presence.expires_at,
        model_agent: presence.model_agent === true ? 1 : 0,
        rep_token: presence.rep_token ?? '',
      };
      await tx.db
        .insertInto('cells')
        .values({ cell_id: presence.cell_id, ...row })
        .onConflict((oc) => oc.column('cell_id').doUpdateSet(row))
        .execute();
      return presence;
    });
    if (appeared) this.#ctx.database.events.announce([cellAppearedNews]);
    return result;
  }

  async listCells(): Promise<CellPresence[]> {
    return listLiveCells(this.#ctx.db, this.#ctx.now().toISOString());
  }

  async removeCell(req: CellIdRequest): Promise<void> {
    await this.#ctx.mutate('removeCell', async (tx) => {
      await tx.db.deleteFrom('cells').where('cell_id', '=', req.cell_id).execute();
    });
  }
}

async function listLiveCells(db: Db, now: string): Promise<CellPresence[]> {
  const rows = await db
    .selectFrom('cells')
    .selectAll()
    .where('expires_at', '>', now)
    .orderBy('cell_id')
    .execute();
  return rows.map((r) => ({
    cell_id: r.cell_id,
    zone: r.zone,
    capacity: JSON.parse(r.capacity) as CellPresence['capacity'],
    rep_url: r.rep_url,
    placement_tags: JSON.parse(r.placement_tags) as string[],
    model_agent: r.model_agent === 1,
    expires_at: r.expires_at,
    ...(r.rep_token ? { rep_token: r.rep_token } : {}),
  }));
}
