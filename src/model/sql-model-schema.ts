import type { Generated, Kysely } from 'kysely';
import { type DbTables, type MigrationList, portable } from '../db/index.js';

/**
 * The model's tables, beside the BBS's in the same database. They have their own migration list
 * and ledger (`model_schema_migrations`), applied by db's one runner under its one lock, so the
 * model's schema can grow without editing the BBS's list; like it, this list only ever appends.
 */
export type ModelDatabase = {
  model_schema_migrations: { version: number; name: string; applied_at: string };
  /** One row (id 1): bumped by every model transaction, so a reader can tell its cache is current. */
  model_meta: { id: number; version: number | string };
  model_cells: { id: string; life: string };
  model_services: { name: string; life: string; subordinate: number };
  model_units: {
    name: string;
    service: string;
    idx: number;
    life: string;
    cell_id: string | null;
    principal: string | null;
  };
  model_relations: { id: string; endpoint_a: string; endpoint_b: string; scope: string; life: string };
  model_scopes: { relation_id: string; unit: string };
  model_cleanups: { id: string; kind: string; target: string; due_at: string };
  model_systems: SystemRow;
  model_system_services: SystemServiceRow & SystemServiceOutcome;
  model_actions: ActionRow;
  model_locks: LockRowRecord;
};

/** Seed 004's system; `phase` is where it is in the seed's diagram (the state inside `active` is computed). */
export type SystemRow = {
  name: string;
  phase: string;
  reason: string;
  created_at: string;
  updated_at: string;
};

/** A deployed service or job of a system: what `planDeploy` compares the next definition with. */
export type SystemServiceRow = {
  system: string;
  path: string;
  /** 'service' | 'job'. */
  kind: string;
  /** The model service name (`system:path`); jobs have none in the model. */
  model_name: string;
  version: string;
  /** The ServiceDefinition / JobDefinition as JSON. */
  spec: string;
  /** The DesiredLRP (or task) running the current version. */
  process_guid: string;
  /** During a rolling update: the previous version's DesiredLRP, removed when the update is done. */
  old_process_guid: string | null;
};

/**
 * A job's outcome at its `version` once seen ('' until then, `completed`, or `failed: reason`):
 * the BBS deletes a completed task after a while, the system's status still says how it ended
 * (migration 2). Written only by `SqlSystemStore.recordJobOutcome`; a new version clears it.
 */
export type SystemServiceOutcome = { outcome: Generated<string> };

/** A deploy or teardown, from acceptance to its end; its locks are rows of `model_locks`. */
export type ActionRow = {
  id: string;
  system: string;
  kind: string;
  path: string;
  /** 'accepted' | 'in_progress' | 'succeeded' | 'failed' (model/action-states.ts). */
  state: string;
  reason: string;
  /** The normalized SystemDefinition as JSON (deploys); '' for a teardown. */
  definition: string;
  /** The server executing it; another server takes it over when its heartbeat stops. */
  owner: string;
  heartbeat_at: string;
  created_at: string;
  updated_at: string;
  finished_at: string | null;
  /** Progress notes (JSON array of strings), shown by `GET /v1/deploys/{id}`. */
  log: string;
  /** How long the action may last from `created_at` before it fails (migration 2). */
  timeout_ms: number | string;
  /** Who asked for it: the token's user name (`anonymous` without auth; '' for rows older than migration 3). */
  principal: string;
  /** For a rollback: the deploy whose definition it redeploys. */
  rollback_of: string | null;
};

export type LockRowRecord = {
  system: string;
  path: string;
  action_id: string;
  mode: string;
  action: string;
  action_path: string;
};

export type ModelDb = Kysely<DbTables & ModelDatabase>;

/** Portable DDL: both dialects accept every statement as written. */
const modelMigrations = [
  {
    version: 1,
    name: 'model entities, cleanups, systems, actions, lock rows',
    statements: portable([
      'CREATE TABLE model_meta (id INTEGER PRIMARY KEY, version BIGINT NOT NULL)',
      'INSERT INTO model_meta (id, version) VALUES (1, 0)',
      'CREATE TABLE model_cells (id TEXT PRIMARY KEY, life TEXT NOT NULL)',
      'CREATE TABLE model_services (name TEXT PRIMARY KEY, life TEXT NOT NULL, subordinate INTEGER NOT NULL)',
      `CREATE TABLE model_units (name TEXT PRIMARY KEY, service TEXT NOT NULL, idx INTEGER NOT NULL,
        life TEXT NOT NULL, cell_id TEXT, principal TEXT)`,
      'CREATE INDEX model_units_service ON model_units (service, life)',
      'CREATE INDEX model_units_cell ON model_units (cell_id)',
      'CREATE INDEX model_units_principal ON model_units (principal)',
      `CREATE TABLE model_relations (id TEXT PRIMARY KEY, endpoint_a TEXT NOT NULL, endpoint_b TEXT NOT NULL,
        scope TEXT NOT NULL, life TEXT NOT NULL)`,
      'CREATE INDEX model_relations_a ON model_relations (endpoint_a)',
      'CREATE INDEX model_relations_b ON model_relations (endpoint_b)',
      'CREATE TABLE model_scopes (relation_id TEXT NOT NULL, unit TEXT NOT NULL, PRIMARY KEY (relation_id, unit))',
      'CREATE INDEX model_scopes_unit ON model_scopes (unit)',
      'CREATE TABLE model_cleanups (id TEXT PRIMARY KEY, kind TEXT NOT NULL, target TEXT NOT NULL, due_at TEXT NOT NULL)',
      `CREATE TABLE model_systems (name TEXT PRIMARY KEY, phase TEXT NOT NULL, reason TEXT NOT NULL,
        created_at TEXT NOT NULL, updated_at TEXT NOT NULL)`,
      `CREATE TABLE model_system_services (system TEXT NOT NULL, path TEXT NOT NULL, kind TEXT NOT NULL,
        model_name TEXT NOT NULL, version TEXT NOT NULL, spec TEXT NOT NULL, process_guid TEXT NOT NULL,
        old_process_guid TEXT, PRIMARY KEY (system, path))`,
      `CREATE TABLE model_actions (id TEXT PRIMARY KEY, system TEXT NOT NULL, kind TEXT NOT NULL,
        path TEXT NOT NULL, state TEXT NOT NULL, reason TEXT NOT NULL, definition TEXT NOT NULL,
        owner TEXT NOT NULL, heartbeat_at TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
        finished_at TEXT, log TEXT NOT NULL)`,
      'CREATE INDEX model_actions_state ON model_actions (state, system)',
      `CREATE TABLE model_locks (system TEXT NOT NULL, path TEXT NOT NULL, action_id TEXT NOT NULL,
        mode TEXT NOT NULL, action TEXT NOT NULL, action_path TEXT NOT NULL,
        PRIMARY KEY (system, path, action_id))`,
      'CREATE INDEX model_locks_action ON model_locks (action_id)',
    ]),
  },
  {
    version: 2,
    name: 'action lifetime: timeout, accepted/in_progress states, job outcomes',
    statements: portable([
      'ALTER TABLE model_actions ADD COLUMN timeout_ms BIGINT NOT NULL DEFAULT 600000',
      "UPDATE model_actions SET state = 'in_progress' WHERE state = 'running'",
      "ALTER TABLE model_system_services ADD COLUMN outcome TEXT NOT NULL DEFAULT ''",
    ]),
  },
  {
    version: 3,
    name: 'deploy history: who asked for each action, and what a rollback redeploys',
    statements: portable([
      "ALTER TABLE model_actions ADD COLUMN principal TEXT NOT NULL DEFAULT ''",
      'ALTER TABLE model_actions ADD COLUMN rollback_of TEXT',
      'CREATE INDEX model_actions_system ON model_actions (system, created_at)',
    ]),
  },
];

export const modelMigrationList: MigrationList = {
  owner: 'model',
  ledger: 'model_schema_migrations',
  migrations: modelMigrations,
};
