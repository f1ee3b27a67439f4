import { cellPassDigest, type DigestedActual, type DigestedTask } from '../cell-pass-digest.js';
import type { StoreContext } from './store-context.js';

/**
 * The digest of a cell's records read from their keys and tags only (two index reads, no record
 * decoded): what a pass compares with the digest its rep holds before it sends the lists again.
 */
export async function readCellPassDigest(ctx: StoreContext, cellId: string): Promise<string> {
  const [actualRows, taskRows] = await Promise.all([
    ctx.db
      .selectFrom('actual_lrps')
      .select(['process_guid', 'idx', 'evacuating', 'tag_epoch', 'tag_index'])
      .where('cell_id', '=', cellId)
      .execute(),
    ctx.db
      .selectFrom('tasks')
      .select(['task_guid', 'tag_epoch', 'tag_index'])
      .where('cell_id', '=', cellId)
      .execute(),
  ]);
  const actuals = actualRows.map(
    (r): DigestedActual => ({
      process_guid: r.process_guid,
      index: Number(r.idx),
      evacuating: Boolean(Number(r.evacuating)),
      modification_tag: { epoch: r.tag_epoch, index: Number(r.tag_index) },
    }),
  );
  const tasks = taskRows.map(
    (r): DigestedTask => ({
      task_guid: r.task_guid,
      modification_tag: { epoch: r.tag_epoch, index: Number(r.tag_index) },
    }),
  );
  return cellPassDigest(actuals, tasks);
}
