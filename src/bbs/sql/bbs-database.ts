import type { Generated } from 'kysely';
import type { DbTables } from '../../db/index.js';

/**
 * The tables of the BBS as kysely sees them. Both dialects store the same shapes: JSON as TEXT,
 * booleans as 0/1, times as ISO-8601 text (which sorts like the time it names), so one query
 * builder serves both. PostgreSQL returns BIGINT as a string, hence `number | string` on ids.
 */
// A type alias, not an interface: kysely's withTables wants an index-signature-compatible shape.
export type BbsDatabase = DbTables & {
  bbs_schema_migrations: { version: number; name: string; applied_at: string };
  desired_lrps: DesiredLrpRow;
  actual_lrps: ActualLrpRow;
  tasks: TaskRow;
  domains: { domain: string; fresh_until: string; owner: string | null };
  cells: CellRow;
  start_requests: StartRequestRow;
  volume_pins: VolumePinRow;
  stop_requests: StopRequestRow;
  leases: { name: string; holder: string; token: number; expires_at: string };
};

export interface DesiredLrpRow {
  process_guid: string;
  domain: string;
  instances: number;
  /** The fields that never change in place, as JSON. */
  definition: string;
  routes: string;
  annotation: string;
  created_at: string;
  tag_epoch: string;
  tag_index: number;
}

export interface ActualLrpRow {
  process_guid: string;
  idx: number;
  /** 1 for the copy under `/evacuating`; part of the primary key. */
  evacuating: number;
  domain: string;
  instance_guid: string;
  cell_id: string;
  state: string;
  crash_count: number;
  last_crashed_at: string | null;
  crash_reason: string;
  since: string;
  placement_error: string;
  address: string;
  ports: string;
  tag_epoch: string;
  tag_index: number;
}

export interface TaskRow {
  task_guid: string;
  domain: string;
  state: string;
  cell_id: string;
  definition: string;
  result: string;
  failed: number;
  failure_reason: string;
  created_at: string;
  updated_at: string;
  first_completed_at: string | null;
  tag_epoch: string;
  tag_index: number;
}

export interface CellRow {
  cell_id: string;
  zone: string;
  capacity: string;
  rep_url: string;
  placement_tags: string;
  expires_at: string;
  /** 1 when the cell runs the model's unit and machine agents for its units (migration 4). */
  model_agent: number;
  /** The bearer token the cell's rep demands; '' for a cell that sent none (migration 6). */
  rep_token: string;
}

export interface StartRequestRow {
  id: Generated<number | string>;
  kind: string;
  guid: string;
  idx: number;
  domain: string;
  payload: string;
  available_at: string;
  created_at: string;
}

export interface StopRequestRow {
  id: Generated<number | string>;
  kind: string;
  guid: string;
  idx: number;
  instance_guid: string;
  cell_id: string;
  available_at: string;
  created_at: string;
}

/** The cell holding a named volume's data for one instance index of a domain (migration 8). */
export interface VolumePinRow {
  domain: string;
  volume: string;
  idx: number;
  cell_id: string;
  created_at: string;
}
