import type { TaskStartRequest } from '../bbs/index.js';
import { actualLrpKey } from '../bbs/index.js';
import type { RepLRPWork, RepTaskWork, RepWork } from '../rep/index.js';
import type { AuctionWork, LRPAuctionWork, TaskAuctionWork } from './auction.js';

/**
 * The auctioneer's work items as its pool keys them, and as the reps take them: one key per LRP
 * index or task, whatever batch or retry it arrives in; the rep's work is the auction's without
 * what only the auction reads (zones, pins).
 */
export function lrpKey(processGuid: string, index: number): string {
  return `lrp:${actualLrpKey({ process_guid: processGuid, index })}`;
}

export function taskKey(taskGuid: string): string {
  return `task:${taskGuid}`;
}

export function workKey(w: AuctionWork): string {
  return w.kind === 'lrp' ? lrpKey(w.process_guid, w.index) : taskKey(w.task_guid);
}

export function keysOf(work: RepWork): string[] {
  return [
    ...work.lrps.map((w) => lrpKey(w.process_guid, w.index)),
    ...work.tasks.map((w) => taskKey(w.task_guid)),
  ];
}

export function samePlacement(a: AuctionWork, b: AuctionWork): boolean {
  const pin = (w: AuctionWork) => (w.kind === 'lrp' ? (w.pinned_cell ?? '') : '');
  return pin(a) === pin(b) && a.placement_tags.join('\u0000') === b.placement_tags.join('\u0000');
}

export function taskAuctionWork(req: TaskStartRequest): TaskAuctionWork {
  return {
    kind: 'task',
    task_guid: req.task_guid,
    domain: req.domain,
    memory_mb: req.memory_mb,
    disk_mb: req.disk_mb,
    placement_tags: req.placement_tags,
  };
}

export function repLRPWork(w: LRPAuctionWork): RepLRPWork {
  return {
    process_guid: w.process_guid,
    domain: w.domain,
    index: w.index,
    memory_mb: w.memory_mb,
    disk_mb: w.disk_mb,
    placement_tags: w.placement_tags,
  };
}

export function repTaskWork(w: TaskAuctionWork): RepTaskWork {
  return {
    task_guid: w.task_guid,
    domain: w.domain,
    memory_mb: w.memory_mb,
    disk_mb: w.disk_mb,
    placement_tags: w.placement_tags,
  };
}
