import type { Insertable } from 'kysely';
import { InvalidArgumentError } from '../../core/index.js';
import type {
  AckRequestsRequest,
  LRPStopRequest,
  StartRequestDelivery,
  StopRequestDelivery,
  TakeRequestsRequest,
  TakeStopRequestsRequest,
  TaskStartRequest,
  TaskStartRequestDelivery,
} from '../bbs-store.js';
import type { ActualLRP, DesiredLRP } from '../bbs-types.js';
import { pinnedPlacementTags } from '../volume-mounts.js';
import type { StartRequestRow } from './bbs-database.js';
import { loadDesired } from './desired-lrp-records.js';
import { insertChunk, type StoreContext, type Tx } from './store-context.js';
import { pinnedCells } from './volume-pins.js';

/**
 * The two outboxes: start requests (for the auctioneer) and stop requests (for the reps), written
 * by the LRP and task mutations in their own transaction, taken with a visibility timeout and
 * acknowledged once handled (at-least-once delivery).
 */
export class RequestOutbox {
  readonly #ctx: StoreContext;

  constructor(ctx: StoreContext) {
    this.#ctx = ctx;
  }

  async takeStartRequests(req: TakeRequestsRequest): Promise<StartRequestDelivery[]> {
    const rows = await this.#takeStartRows('lrp', req);
    // One request per DesiredLRP and payload: indices pinned to different cells differ in their tags.
    const byRequest = new Map<string, { ids: number[]; indices: number[]; row: (typeof rows)[number] }>();
    for (const row of rows) {
      const key = `${row.guid}\u0000${row.payload}`;
      const group = byRequest.get(key) ?? { ids: [], indices: [], row };
      group.ids.push(Number(row.id));
      if (!group.indices.includes(row.idx)) group.indices.push(row.idx);
      byRequest.set(key, group);
    }
    return [...byRequest.values()].map(({ ids, indices, row }) => {
      const payload = JSON.parse(row.payload) as {
        memory_mb: number;
        disk_mb: number;
        placement_tags: string[];
        pinned_cell?: string;
      };
      return {
        ids,
        request: {
          process_guid: row.guid,
          domain: row.domain,
          indices: indices.sort((a, b) => a - b),
          memory_mb: payload.memory_mb,
          disk_mb: payload.disk_mb,
          placement_tags: payload.placement_tags,
          ...(payload.pinned_cell !== undefined ? { pinned_cell: payload.pinned_cell } : {}),
        },
      };
    });
  }

  async ackStartRequests(req: AckRequestsRequest): Promise<void> {
    await this.#ackRequests('start_requests', 'lrp', req);
  }

  async takeTaskStartRequests(req: TakeRequestsRequest): Promise<TaskStartRequestDelivery[]> {
    const rows = await this.#takeStartRows('task', req);
    return rows.map((row) => {
      const payload = JSON.parse(row.payload) as Omit<TaskStartRequest, 'task_guid' | 'domain'>;
      return { id: Number(row.id), request: { task_guid: row.guid, domain: row.domain, ...payload } };
    });
  }

  async ackTaskStartRequests(req: AckRequestsRequest): Promise<void> {
    await this.#ackRequests('start_requests', 'task', req);
  }

  async takeStopRequests(req: TakeStopRequestsRequest): Promise<StopRequestDelivery[]> {
    const rows = await this.#takeStopRows(req);
    return rows.map((row) => ({
      id: Number(row.id),
      kind: row.kind === 'task' ? 'task' : 'lrp',
      request: {
        process_guid: row.guid,
        index: row.idx,
        instance_guid: row.instance_guid,
        cell_id: row.cell_id,
      },
    }));
  }

  async ackStopRequests(req: AckRequestsRequest): Promise<void> {
    await this.#ackRequests('stop_requests', undefined, req);
  }

  /**
   * Start requests not yet acknowledged (work not placed yet, taken or not), counted up to
   * `limit` only: the API's admission check asks on every create, so its cost must not grow
   * with the backlog it guards against.
   */
  async countPendingStarts(limit: number): Promise<number> {
    const sql = 'SELECT COUNT(*) FROM (SELECT 1 FROM start_requests LIMIT ?) AS pending';
    const rows = await this.#ctx.backend.readRows((query) => query(sql, [limit], (row) => Number(row[0])));
    return rows[0] ?? 0;
  }

  async #takeStartRows(kind: 'lrp' | 'task', req: TakeRequestsRequest) {
    validateTake(req);
    return this.#ctx.mutate('takeStartRequests', async (tx) => {
      let query = tx.db
        .selectFrom('start_requests')
        .selectAll()
        .where('kind', '=', kind)
        .where('available_at', '<=', tx.now)
        .orderBy('id')
        .limit(req.limit);
      // Several auctioneers may take at once: each skips the rows another is taking.
      if (this.#ctx.lockRows) query = query.forUpdate().skipLocked();
      const rows = await query.execute();
      await this.#hide(tx, 'start_requests', rows, req.visibility_ms);
      return rows;
    });
  }

  async #takeStopRows(req: TakeStopRequestsRequest) {
    validateTake(req);
    return this.#ctx.mutate('takeStopRequests', async (tx) => {
      let query = tx.db
        .selectFrom('stop_requests')
        .selectAll()
        .where('available_at', '<=', tx.now)
        .orderBy('id')
        .limit(req.limit);
      if (req.cell_id !== undefined) query = query.where('cell_id', '=', req.cell_id);
      if (this.#ctx.lockRows) query = query.forUpdate().skipLocked();
      const rows = await query.execute();
      await this.#hide(tx, 'stop_requests', rows, req.visibility_ms);
      return rows;
    });
  }

  /** A taken request comes back after `visibility_ms` unless acknowledged: at-least-once delivery. */
  async #hide(
    tx: Tx,
    table: 'start_requests' | 'stop_requests',
    rows: ReadonlyArray<{ id: number | string }>,
    visibilityMs: number,
  ): Promise<void> {
    if (rows.length === 0) return;
    await tx.db
      .updateTable(table)
      .set({ available_at: new Date(tx.nowMs + visibilityMs).toISOString() })
      .where(
        'id',
        'in',
        rows.map((r) => r.id),
      )
      .execute();
  }

  async #ackRequests(
    table: 'start_requests' | 'stop_requests',
    kind: string | undefined,
    req: AckRequestsRequest,
  ): Promise<void> {
    if (req.ids.length === 0) return;
    await this.#ctx.mutate(`ack ${table}`, async (tx) => {
      for (let i = 0; i < req.ids.length; i += insertChunk) {
        let query = tx.db.deleteFrom(table).where('id', 'in', req.ids.slice(i, i + insertChunk));
        if (kind !== undefined) query = query.where('kind', '=', kind);
        await query.execute();
      }
    });
  }
}

export async function recordStop(tx: Tx, kind: 'lrp' | 'task', stop: LRPStopRequest): Promise<void> {
  await tx.db
    .insertInto('stop_requests')
    .values({
      kind,
      guid: stop.process_guid,
      idx: stop.index,
      instance_guid: stop.instance_guid,
      cell_id: stop.cell_id,
      available_at: tx.now,
      created_at: tx.now,
    })
    .execute();
}

/**
 * Start requests for `indices` of `desired`, one row each. An index pinned to a cell by its named
 * volumes (volume-pins.ts) carries that cell's placement tag, so the auction places it there or
 * nowhere.
 */
export async function recordStartRequests(
  tx: Tx,
  desired: DesiredLRP,
  indices: readonly number[],
): Promise<void> {
  await insertStartRequestRows(tx, await startRequestRows(tx, desired, indices));
}

/**
 * Start requests for the indices of several DesiredLRPs, in the order given, inserted a chunk of
 * rows at a time: the converger's unclaims of a lost cell name a hundred LRPs or more, and one
 * insert each was a round trip each on PostgreSQL.
 */
export async function recordStartRequestsOfMany(
  tx: Tx,
  wanted: readonly { readonly desired: DesiredLRP; readonly indices: readonly number[] }[],
): Promise<void> {
  const rows: NewStartRequest[] = [];
  for (const { desired, indices } of wanted) rows.push(...(await startRequestRows(tx, desired, indices)));
  await insertStartRequestRows(tx, rows);
}

type NewStartRequest = Insertable<StartRequestRow>;

async function startRequestRows(
  tx: Tx,
  desired: DesiredLRP,
  indices: readonly number[],
): Promise<NewStartRequest[]> {
  const pins = await pinnedCells(tx, desired, indices);
  const base = { memory_mb: desired.memory_mb, disk_mb: desired.disk_mb };
  const unpinned = JSON.stringify({ ...base, placement_tags: desired.placement_tags });
  const payloadOf = (index: number): string => {
    const cell = pins.get(index);
    if (cell === undefined) return unpinned;
    return JSON.stringify({
      ...base,
      placement_tags: pinnedPlacementTags(desired.placement_tags, cell),
      pinned_cell: cell,
    });
  };
  return indices.map((index) => ({
    kind: 'lrp',
    guid: desired.process_guid,
    idx: index,
    domain: desired.domain,
    payload: payloadOf(index),
    available_at: tx.now,
    created_at: tx.now,
  }));
}

async function insertStartRequestRows(tx: Tx, rows: readonly NewStartRequest[]): Promise<void> {
  for (let i = 0; i < rows.length; i += insertChunk)
    await tx.db
      .insertInto('start_requests')
      .values(rows.slice(i, i + insertChunk))
      .execute();
}

/** An instance nobody desires any more is not auctioned; the converger will remove it. */
export async function requestStartIfDesired(tx: Tx, lrp: ActualLRP): Promise<void> {
  const desired = await loadDesired(tx, lrp.process_guid, false);
  if (desired && lrp.index < desired.instances) await recordStartRequests(tx, desired, [lrp.index]);
}

function validateTake(req: TakeRequestsRequest): void {
  if (!Number.isInteger(req.limit) || req.limit < 1) {
    throw new InvalidArgumentError('limit must be a positive integer', { field: 'limit' });
  }
  if (!Number.isFinite(req.visibility_ms) || req.visibility_ms < 0) {
    throw new InvalidArgumentError('visibility_ms must be a non-negative number', { field: 'visibility_ms' });
  }
}
