import type {
  ActualLRP,
  ActualLRPState,
  CellPresence,
  DesiredLRP,
  Domain,
  Task,
  TaskState,
} from './bbs-types.js';

/**
 * The BBS's whole-store side, apart from its records' requests (bbs-store.ts): the leases its
 * singletons hold, the snapshots convergence and the CLI read, the ordered event log every
 * watcher follows, and the record counts of metrics.
 */

/** Why a cell left: its rep removed it (a clean stop), or its presence expired. */
export type CellGoneReason = 'removed' | 'expired';

export interface Lease {
  readonly name: string;
  readonly holder: string;
  /** Grows by one whenever the holder changes: a fencing token for the singleton's writes. */
  readonly token: number;
  readonly expires_at: string;
}
export interface AcquireLeaseRequest {
  readonly name: string;
  readonly holder: string;
  readonly ttl_ms: number;
}
export interface LeaseResult {
  readonly acquired: boolean;
  /** The lease as it is now: ours when acquired, the other holder's when not. */
  readonly lease: Lease;
}
export interface ReleaseLeaseRequest {
  readonly name: string;
  readonly holder: string;
}

export interface BbsSnapshot {
  readonly desired_lrps: DesiredLRP[];
  readonly actual_lrps: ActualLRP[];
  readonly domains: Domain[];
  readonly cells: CellPresence[];
  /** The store's clock when the snapshot was taken. */
  readonly now: string;
}

/**
 * An ActualLRP as convergence sees it: identity, placement, state, crash history, tag. What it
 * leaves out (crash reason, placement error, address, ports) only the rep, the router and people
 * read, and it is most of what a row costs to read (ports is JSON).
 */
export type ConvergenceActualLRP = Omit<ActualLRP, 'crash_reason' | 'placement_error' | 'address' | 'ports'>;

/**
 * An ActualLRP that needs nothing from convergence: an instance (not an `/evacuating` copy),
 * CLAIMED or RUNNING, on a cell present in the snapshot, at an index its DesiredLRP still wants.
 * A pass makes no item for one; all it learns from it is that its index has an instance.
 */
export interface SettledInstances {
  readonly process_guid: string;
  /** How many of this LRP's ActualLRPs are settled and left out of `actual_lrps`. */
  readonly count: number;
}

export interface ConvergenceSnapshot extends Omit<BbsSnapshot, 'actual_lrps'> {
  /**
   * Every ActualLRP except the settled instances of the LRPs in `settled_instances`. At 100,000
   * instances in a healthy cluster that is a few records instead of all of them: the read, the
   * objects and their garbage were most of an idle server's convergence cost.
   */
  readonly actual_lrps: ConvergenceActualLRP[];
  /**
   * The LRPs whose settled instances were left out, each with every index below its instance
   * count held by a record: a settled one left out, or one in `actual_lrps`. So an index of such
   * an LRP with no record in `actual_lrps` is settled, not missing. An LRP with an index that has
   * no record at all is not here, and all its records are listed.
   */
  readonly settled_instances: SettledInstances[];
  /**
   * The instances whose start request is still in the outbox (not yet acked by the auctioneer,
   * whether waiting to be taken or taken and held): the auctioneer will still place them.
   */
  readonly queued_lrp_starts: { readonly process_guid: string; readonly index: number }[];
}

export interface ReadEventsRequest {
  /** An event id (the SSE `id`, opaque); absent = from the oldest event kept. */
  readonly after?: string;
  readonly limit?: number;
}
export interface PruneEventsRequest {
  readonly before: string;
}

export type BbsEventType =
  | 'desired_lrp_created'
  | 'desired_lrp_changed'
  | 'desired_lrp_removed'
  | 'actual_lrp_created'
  | 'actual_lrp_changed'
  | 'actual_lrp_removed'
  | 'task_created'
  | 'task_changed'
  | 'task_removed'
  | 'cell_appeared'
  | 'cell_changed'
  | 'cell_disappeared';

interface EventBase {
  /** Opaque, ordered cursor; give it back as `after` (or SSE `Last-Event-ID`) to resume. */
  readonly id: string;
  readonly created_at: string;
}
export type BbsEventBody =
  | { readonly type: 'desired_lrp_created'; readonly desired_lrp: DesiredLRP }
  | { readonly type: 'desired_lrp_changed'; readonly before: DesiredLRP; readonly after: DesiredLRP }
  | { readonly type: 'desired_lrp_removed'; readonly desired_lrp: DesiredLRP }
  | { readonly type: 'actual_lrp_created'; readonly actual_lrp: ActualLRP }
  | { readonly type: 'actual_lrp_changed'; readonly before: ActualLRP; readonly after: ActualLRP }
  | { readonly type: 'actual_lrp_removed'; readonly actual_lrp: ActualLRP }
  | { readonly type: 'task_created'; readonly task: Task }
  | { readonly type: 'task_changed'; readonly before: Task; readonly after: Task }
  | { readonly type: 'task_removed'; readonly task: Task }
  /**
   * A cell's presence began (new, or back after it expired or was removed), changed what it
   * offers (zone, capacity, rep URL, tags), or ended (removed by its rep, or expired and reaped by
   * `expireCells`). Heartbeats that only extend a presence write nothing. Never the rep's token.
   */
  | { readonly type: 'cell_appeared'; readonly cell: CellPresence }
  | { readonly type: 'cell_changed'; readonly before: CellPresence; readonly after: CellPresence }
  | { readonly type: 'cell_disappeared'; readonly cell_id: string; readonly reason: CellGoneReason };
export type BbsEvent = EventBase & BbsEventBody;

export interface RecordCounts {
  readonly desired_lrps: number;
  readonly actual_lrps: Readonly<Record<ActualLRPState, number>>;
  readonly evacuating_actual_lrps: number;
  readonly tasks: Readonly<Record<TaskState, number>>;
  readonly cells: number;
  readonly start_requests: number;
  readonly stop_requests: number;
}
