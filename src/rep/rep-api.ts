import type { CellCapacity } from '../bbs/index.js';

/**
 * The HTTP contract between a cell's rep and the auctioneer (seed 002: "the Auctioneer fetches
 * the state of each Cell … then submits the allocated work to all Cells"). The rep serves:
 *
 *   GET  /v1/state      → RepState
 *   POST /v1/work       RepWork → RepWorkResult   (reserve + start; what it cannot take comes back)
 *   POST /v1/stop       RepStopRequest → 204     (stop one LRP instance this cell runs)
 *   POST /v1/evacuate   → 202                    (begin evacuation; the cell exits when done)
 *
 * JSON fields are snake_case like every berth API.
 */
export interface RepState {
  readonly cell_id: string;
  readonly zone: string;
  readonly capacity: CellCapacity;
  /** Resources reserved by containers in any state (RESERVED … COMPLETED until deleted). */
  readonly used: CellCapacity;
  /** Instances per process_guid on this cell, to avoid colocating one DesiredLRP. */
  readonly lrps: Readonly<Record<string, number>>;
  readonly evacuating: boolean;
  /** Tags the cell requires of its work (`berth cell --tags`). */
  readonly placement_tags: readonly string[];
  /** Tags the cell also accepts: its own `cellPlacementTag` and `berth cell --optional-tags`. */
  readonly optional_placement_tags: readonly string[];
}

export interface RepLRPWork {
  readonly process_guid: string;
  readonly domain: string;
  readonly index: number;
  readonly memory_mb: number;
  readonly disk_mb: number;
  readonly placement_tags: readonly string[];
}

export interface RepTaskWork {
  readonly task_guid: string;
  readonly domain: string;
  readonly memory_mb: number;
  readonly disk_mb: number;
  readonly placement_tags: readonly string[];
}

export interface RepWork {
  readonly lrps: readonly RepLRPWork[];
  readonly tasks: readonly RepTaskWork[];
}

/** Work the rep refused (no capacity, evacuating, tags) goes back to the auctioneer's pool. */
export interface RepWorkResult {
  readonly failed_lrps: readonly RepLRPWork[];
  readonly failed_tasks: readonly RepTaskWork[];
}

export interface RepStopRequest {
  readonly process_guid: string;
  readonly index: number;
  readonly instance_guid: string;
}
