import { actualDigestLine, digestOfLines, taskDigestLine } from '../cell-pass-digest.js';
import type { StoreContext } from './store-context.js';

/**
 * What an idle cell's pass reads, as constant SQL in one read transaction (one snapshot): whether
 * a stop request waits for the cell, and its records' keys and tags. The ActualLRPs' come from the
 * covering index `actual_lrps_cell_tags` alone (migration 9), no row looked up per instance.
 */
export const idlePassSql = {
  stopWaiting: 'SELECT 1 FROM stop_requests WHERE cell_id = ? AND available_at <= ? LIMIT 1',
  actualTags: 'SELECT process_guid, idx, evacuating, tag_epoch, tag_index FROM actual_lrps WHERE cell_id = ?',
  taskTags: 'SELECT task_guid, tag_epoch, tag_index FROM tasks WHERE cell_id = ?',
} as const;

/** What `readIdleCellPass` found: a stop request waiting, and the digest of the cell's records. */
export interface IdleCellPass {
  readonly stopWaiting: boolean;
  readonly digest: string;
}

/**
 * The digest of a cell's records read from their keys and tags only, rows as arrays (no record
 * decoded), and whether a stop request waits for it: what a pass compares with the digest its rep
 * holds before it takes stops or sends the lists again. A pass that finds nothing waiting and its
 * digest unchanged takes no write lock.
 */
export async function readIdleCellPass(ctx: StoreContext, cellId: string): Promise<IdleCellPass> {
  const now = ctx.now().toISOString();
  return ctx.backend.readRows(async (query) => {
    const stops = await query(idlePassSql.stopWaiting, [cellId, now], () => true);
    const actualLines = await query(idlePassSql.actualTags, [cellId], (r) =>
      actualDigestLine(String(r[0]), Number(r[1]), Boolean(Number(r[2])), String(r[3]), Number(r[4])),
    );
    const taskLines = await query(idlePassSql.taskTags, [cellId], (r) =>
      taskDigestLine(String(r[0]), String(r[1]), Number(r[2])),
    );
    return { stopWaiting: stops.length > 0, digest: digestOfLines([...actualLines, ...taskLines]) };
  });
}
