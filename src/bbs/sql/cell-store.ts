import { CompiledQuery, type Selectable } from 'kysely';
import { InvalidArgumentError } from '../../core/index.js';
import type { CellIdRequest, HeartbeatCellRequest, HeartbeatCellResponse } from '../bbs-store.js';
import { type CellPresence, publicCellPresence } from '../bbs-types.js';
import { cellPacing } from '../cell-pacing.js';
import type { BbsDatabase } from './bbs-database.js';
import type { Db, StoreContext, Tx } from './store-context.js';

/**
 * The in-process news (`SqlBbsStore.onEvents`) of a cell whose presence began: new, or back after
 * it expired. The stored event of the same name tells the same to watchers over HTTP.
 */
export const cellAppearedNews = 'cell_appeared';

type CellRow = Selectable<BbsDatabase['cells']>;

/**
 * Cell presences: a cell is live while its heartbeats keep its `expires_at` ahead of the clock.
 * A presence that begins, changes what it offers or ends is an event on the log (so the console
 * and other watchers follow cells without polling); a heartbeat that only extends it is not.
 */
export class CellStore {
  readonly #ctx: StoreContext;
  /**
   * The live cells, counted at most every few seconds for the pacing a heartbeat grants: a count
   * per heartbeat would cost what the pacing saves. Cells that appear in between are added at once.
   */
  #liveCells: { count: number; atMs: number } | undefined;

  constructor(ctx: StoreContext) {
    this.#ctx = ctx;
  }

  async heartbeatCell(req: HeartbeatCellRequest): Promise<HeartbeatCellResponse> {
    if (!req.presence.cell_id)
      throw new InvalidArgumentError('cell_id must not be empty', { field: 'cell_id' });
    return this.#ctx.mutate('heartbeatCell', async (tx) => {
      const { rows } = await tx.db.executeQuery<CellRow>(
        CompiledQuery.raw(tx.sql.selectCell, [req.presence.cell_id]),
      );
      const before = rows[0];
      const appears = before === undefined || before.expires_at <= tx.now;
      const pacing = cellPacing(await this.#countLive(tx, appears), req.ttl_ms, this.#ctx.cellPacing);
      const presence: CellPresence = {
        ...req.presence,
        expires_at: new Date(tx.nowMs + pacing.ttl_ms).toISOString(),
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
      if (
        before !== undefined &&
        !appears &&
        !offerChanged(before, row) &&
        before.rep_token === row.rep_token
      ) {
        // Most heartbeats: the same presence, a later expiry.
        await tx.db.executeQuery(CompiledQuery.raw(tx.sql.renewCell, [row.expires_at, presence.cell_id]));
      } else {
        await tx.db
          .insertInto('cells')
          .values({ cell_id: presence.cell_id, ...row })
          .onConflict((oc) => oc.column('cell_id').doUpdateSet(row))
          .execute();
      }
      // A cell new, or back after its presence expired: placements waiting for room are retried
      // now (the event's commit wakes the auctioneer in process).
      if (appears) {
        tx.events.push({ type: 'cell_appeared', cell: publicCellPresence(presence) });
      } else if (offerChanged(before, row)) {
        tx.events.push({
          type: 'cell_changed',
          before: publicCellPresence(rowToPresence(before)),
          after: publicCellPresence(presence),
        });
      }
      return { ...presence, ...pacing };
    });
  }

  /** The live cells, this heartbeat's included: recounted when the last count is 5 s old. */
  async #countLive(tx: Tx, appears: boolean): Promise<number> {
    const cached = this.#liveCells;
    if (cached && tx.nowMs - cached.atMs < 5_000 && tx.nowMs >= cached.atMs) {
      if (appears) cached.count += 1;
      return Math.max(1, cached.count);
    }
    const row = await tx.db
      .selectFrom('cells')
      .select((eb) => eb.fn.countAll<number | string | bigint>().as('n'))
      .where('expires_at', '>', tx.now)
      .executeTakeFirstOrThrow();
    // The count runs before this heartbeat's own write: a cell that appears is one more.
    const count = Number(row.n) + (appears ? 1 : 0);
    this.#liveCells = { count, atMs: tx.nowMs };
    return Math.max(1, count);
  }

  async listCells(): Promise<CellPresence[]> {
    const rows = await selectCells(this.#ctx.db)
      .where('expires_at', '>', this.#ctx.now().toISOString())
      .execute();
    return rows.map(rowToPresence);
  }

  async removeCell(req: CellIdRequest): Promise<void> {
    await this.#ctx.mutate('removeCell', async (tx) => {
      const removed = await tx.db.deleteFrom('cells').where('cell_id', '=', req.cell_id).executeTakeFirst();
      if (Number(removed.numDeletedRows) > 0) pushGone(tx, [req.cell_id], 'removed');
    });
  }

  async expireCells(): Promise<string[]> {
    return this.#ctx.mutate('expireCells', async (tx) => {
      let query = tx.db
        .selectFrom('cells')
        .select('cell_id')
        .where('expires_at', '<=', tx.now)
        .orderBy('cell_id');
      // PostgreSQL: a heartbeat renewing one of them waits for this transaction, then recreates it
      // as a presence that begins (SQLite's writer lock already serializes the two).
      if (tx.lockRows) query = query.forUpdate();
      const ids = (await query.execute()).map((r) => r.cell_id);
      if (ids.length === 0) return ids;
      await tx.db.deleteFrom('cells').where('cell_id', 'in', ids).execute();
      pushGone(tx, ids, 'expired');
      return ids;
    });
  }
}

function pushGone(tx: Tx, ids: readonly string[], reason: 'removed' | 'expired'): void {
  for (const cell_id of ids) tx.events.push({ type: 'cell_disappeared', cell_id, reason });
}

/** Whether a heartbeat changed what the cell offers (anything but its expiry). */
function offerChanged(before: CellRow, after: Omit<CellRow, 'cell_id'>): boolean {
  return (
    before.zone !== after.zone ||
    before.capacity !== after.capacity ||
    before.rep_url !== after.rep_url ||
    before.placement_tags !== after.placement_tags ||
    before.model_agent !== after.model_agent
  );
}

function selectCells(db: Db) {
  return db.selectFrom('cells').selectAll().orderBy('cell_id');
}

function rowToPresence(r: CellRow): CellPresence {
  return {
    cell_id: r.cell_id,
    zone: r.zone,
    capacity: JSON.parse(r.capacity) as CellPresence['capacity'],
    rep_url: r.rep_url,
    placement_tags: JSON.parse(r.placement_tags) as string[],
    model_agent: r.model_agent === 1,
    expires_at: r.expires_at,
    ...(r.rep_token ? { rep_token: r.rep_token } : {}),
  };
}
