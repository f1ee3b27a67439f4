import type { Generated, Kysely } from 'kysely';
import type { DbTables } from '../db/index.js';

/**
 * The history tables (history-migrations.ts) as kysely sees them. They live in the BBS's database,
 * so a history write and its bus event (a row of `events`, written by db's EventLog) commit together.
 */
// A type alias, not an interface: kysely's withTables wants an index-signature-compatible shape.
export type HistoryTables = {
  containers: ContainerRow;
  container_history: HistoryRow;
  container_logs: { container_id: string; text: string };
  subscriptions: SubscriptionRow;
  subscription_deliveries: DeliveryRow;
};

export type HistoryDb = Kysely<DbTables & HistoryTables>;

export interface ContainerRow {
  seq: Generated<number | string>;
  id: string;
  image: string;
  /** JSON array. */
  command: string;
  /** JSON array. */
  env_names: string;
  cell_id: string;
  owner_kind: string;
  owner_id: string;
  system: string | null;
  status: string;
  status_time: string;
  created_at: string;
  updated_at: string;
  /** When the newest history item happened and its id: decides whether a new item can be stepped. */
  newest_time: string;
  newest_id: number | string;
  exit_code: number | null;
  finalized_at: string | null;
  /** JSON array of ContainerOutput. */
  outputs: string;
  logs_size: number;
  logs_truncated: number;
}

export interface HistoryRow {
  id: Generated<number | string>;
  container_id: string;
  status: string;
  time_recorded: string;
  external_timestamp: string | null;
  exit_code: number | null;
  entity_type: string;
  entity_id: string | null;
  message: string | null;
  dedupe_key: string;
}

export interface SubscriptionRow {
  id: string;
  url: string;
  /** JSON array of statuses; empty = every status. */
  statuses: string;
  created_at: string;
  created_by: string | null;
  removed_at: string | null;
}

export interface DeliveryRow {
  id: Generated<number | string>;
  subscription_id: string;
  payload: string;
  /** pending | delivered | failed */
  state: string;
  attempts: number;
  next_attempt_at: string;
  last_status: number | null;
  last_error: string | null;
  created_at: string;
  updated_at: string;
}
