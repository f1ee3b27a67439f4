import { cellAppearedNews } from '../bbs/index.js';

/**
 * Events whose transaction may have written a start request: a desire or a scale-up, a new or
 * unclaimed (crashed, re-emitted, evacuated) instance, a new task. Claims and starts are
 * `actual_lrp_changed` too, so a busy cluster wakes the auctioneer often; `minBatchGapMs` bounds that.
 * A cell that appears (new, or back after its presence expired) brings room: the work waiting in
 * the pool for room is retried at once.
 */
export const startRequestEvents: ReadonlySet<string> = new Set([
  cellAppearedNews,
  'desired_lrp_created',
  'desired_lrp_changed',
  'actual_lrp_created',
  'actual_lrp_changed',
  'task_created',
]);

/**
 * Events that may mean room on a cell: a task that ended (its container is deleted right after)
 * or went, an instance that went. The kept cell states may then show less room than there is, so
 * they are read again next batch; the events wake the auctioneer only while work waits in its
 * pool. (An instance that crashed or stopped is `actual_lrp_changed`, above.)
 */
export const roomEvents: ReadonlySet<string> = new Set([
  'task_changed',
  'task_removed',
  'actual_lrp_removed',
]);
