import { type Kysely, sql } from 'kysely';
import type { BbsDatabase } from './bbs-database.js';

export type SqlDialectKind = 'sqlite' | 'postgres';

/** A versioned schema change. Migrations only ever append; a released one is never edited. */
export interface BbsMigration {
  readonly version: number;
  readonly name: string;
  readonly statements: Readonly<Record<SqlDialectKind, readonly string[]>>;
}

/** The few places the two dialects differ in DDL. */
const idColumn: Readonly<Record<SqlDialectKind, string>> = {
  // AUTOINCREMENT: ids are never reused, so an event id seen once is never handed out again.
  sqlite: 'INTEGER PRIMARY KEY AUTOINCREMENT',
  postgres: 'BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY',
};
const txidColumn: Readonly<Record<SqlDialectKind, string>> = {
  // SQLite commits one writer at a time, so the id alone orders events.
  sqlite: 'INTEGER NOT NULL DEFAULT 0',
  postgres: 'BIGINT NOT NULL DEFAULT (pg_current_xact_id()::text::bigint)',
};

const actualLrpColumns = `process_guid TEXT NOT NULL, idx INTEGER NOT NULL, evacuating INTEGER NOT NULL, domain TEXT NOT NULL,
      instance_guid TEXT NOT NULL, cell_id TEXT NOT NULL, state TEXT NOT NULL, crash_count INTEGER NOT NULL,
      last_crashed_at TEXT, crash_reason TEXT NOT NULL, since TEXT NOT NULL, placement_error TEXT NOT NULL,
      address TEXT NOT NULL, ports TEXT NOT NULL, tag_epoch TEXT NOT NULL, tag_index INTEGER NOT NULL,
      PRIMARY KEY (process_guid, idx, evacuating)`;

const actualLrpColumnNames =
  'process_guid, idx, evacuating, domain, instance_guid, cell_id, state, crash_count, last_crashed_at, ' +
  'crash_reason, since, placement_error, address, ports, tag_epoch, tag_index';

function initialSchema(kind: SqlDialectKind): string[] {
  return [
    `CREATE TABLE desired_lrps (
      process_guid TEXT PRIMARY KEY, domain TEXT NOT NULL, instances INTEGER NOT NULL,
      definition TEXT NOT NULL, routes TEXT NOT NULL, annotation TEXT NOT NULL, created_at TEXT NOT NULL,
      tag_epoch TEXT NOT NULL, tag_index INTEGER NOT NULL)`,
    'CREATE INDEX desired_lrps_domain ON desired_lrps (domain)',
    `CREATE TABLE actual_lrps (${actualLrpColumns})`,
    'CREATE INDEX actual_lrps_cell ON actual_lrps (cell_id)',
    `CREATE TABLE tasks (
      task_guid TEXT PRIMARY KEY, domain TEXT NOT NULL, state TEXT NOT NULL, cell_id TEXT NOT NULL,
      definition TEXT NOT NULL, result TEXT NOT NULL, failed INTEGER NOT NULL, failure_reason TEXT NOT NULL,
      created_at TEXT NOT NULL, updated_at TEXT NOT NULL, first_completed_at TEXT,
      tag_epoch TEXT NOT NULL, tag_index INTEGER NOT NULL)`,
    'CREATE INDEX tasks_state ON tasks (state)',
    'CREATE INDEX tasks_cell ON tasks (cell_id)',
    'CREATE TABLE domains (domain TEXT PRIMARY KEY, fresh_until TEXT NOT NULL)',
    `CREATE TABLE cells (
      cell_id TEXT PRIMARY KEY, zone TEXT NOT NULL, capacity TEXT NOT NULL, rep_url TEXT NOT NULL,
      placement_tags TEXT NOT NULL, expires_at TEXT NOT NULL)`,
    `CREATE TABLE start_requests (
      id ${idColumn[kind]}, kind TEXT NOT NULL, guid TEXT NOT NULL, idx INTEGER NOT NULL, domain TEXT NOT NULL,
      payload TEXT NOT NULL, available_at TEXT NOT NULL, created_at TEXT NOT NULL)`,
    'CREATE INDEX start_requests_available ON start_requests (kind, available_at)',
    'CREATE INDEX start_requests_guid ON start_requests (guid)',
    `CREATE TABLE stop_requests (
      id ${idColumn[kind]}, kind TEXT NOT NULL, guid TEXT NOT NULL, idx INTEGER NOT NULL,
      instance_guid TEXT NOT NULL, cell_id TEXT NOT NULL, available_at TEXT NOT NULL, created_at TEXT NOT NULL)`,
    'CREATE INDEX stop_requests_cell ON stop_requests (cell_id, available_at)',
    `CREATE TABLE events (
      id ${idColumn[kind]}, txid ${txidColumn[kind]}, type TEXT NOT NULL, data TEXT NOT NULL,
      created_at TEXT NOT NULL)`,
    // SQLite reads events by id alone (its rowid); PostgreSQL reads them in (txid, id) order.
    ...(kind === 'postgres' ? ['CREATE INDEX events_order ON events (txid, id)'] : []),
    `CREATE TABLE leases (
      name TEXT PRIMARY KEY, holder TEXT NOT NULL, token INTEGER NOT NULL, expires_at TEXT NOT NULL)`,
  ];
}

/**
 * Container history (src/history): container records, their history items (deduped by a unique
 * key), logs kept after the pod is gone, API tokens (hashed), webhook subscriptions and their
 * delivery log.
 */
function historySchema(kind: SqlDialectKind): string[] {
  return [
    `CREATE TABLE containers (
      seq ${idColumn[kind]}, id TEXT NOT NULL UNIQUE, image TEXT NOT NULL, command TEXT NOT NULL,
      env_names TEXT NOT NULL, cell_id TEXT NOT NULL, owner_kind TEXT NOT NULL, owner_id TEXT NOT NULL,
      system TEXT, status TEXT NOT NULL, status_time TEXT NOT NULL, created_at TEXT NOT NULL,
      updated_at TEXT NOT NULL, newest_time TEXT NOT NULL, newest_id BIGINT NOT NULL, exit_code INTEGER,
      finalized_at TEXT, outputs TEXT NOT NULL, logs_size INTEGER NOT NULL, logs_truncated INTEGER NOT NULL)`,
    'CREATE INDEX containers_status ON containers (status, seq)',
    'CREATE INDEX containers_system ON containers (system, seq)',
    'CREATE INDEX containers_updated ON containers (updated_at)',
    `CREATE TABLE container_history (
      id ${idColumn[kind]}, container_id TEXT NOT NULL, status TEXT NOT NULL, time_recorded TEXT NOT NULL,
      external_timestamp TEXT, exit_code INTEGER, entity_type TEXT NOT NULL, entity_id TEXT, message TEXT,
      dedupe_key TEXT NOT NULL)`,
    // Also the index that reads one container's history.
    'CREATE UNIQUE INDEX container_history_dedupe ON container_history (container_id, dedupe_key)',
    'CREATE TABLE container_logs (container_id TEXT PRIMARY KEY, text TEXT NOT NULL)',
    `CREATE TABLE api_tokens (
      id TEXT PRIMARY KEY, name TEXT NOT NULL, role TEXT NOT NULL, token_hash TEXT NOT NULL UNIQUE,
      created_at TEXT NOT NULL, created_by TEXT, revoked_at TEXT)`,
    `CREATE TABLE subscriptions (
      id TEXT PRIMARY KEY, url TEXT NOT NULL, statuses TEXT NOT NULL, created_at TEXT NOT NULL,
      created_by TEXT, removed_at TEXT)`,
    `CREATE TABLE subscription_deliveries (
      id ${idColumn[kind]}, subscription_id TEXT NOT NULL, payload TEXT NOT NULL, state TEXT NOT NULL,
      attempts INTEGER NOT NULL, next_attempt_at TEXT NOT NULL, last_status INTEGER, last_error TEXT,
      created_at TEXT NOT NULL, updated_at TEXT NOT NULL)`,
    'CREATE INDEX subscription_deliveries_due ON subscription_deliveries (state, next_attempt_at)',
    'CREATE INDEX subscription_deliveries_subscription ON subscription_deliveries (subscription_id, id)',
  ];
}

/**
 * The delivery log of task completion callbacks (src/bbs/task-callback-log.ts): one row per POST
 * attempt, keyed by the task record's epoch so a task re-desired under the same guid starts with
 * an empty log. Rows outlive their task for a retention period, so "what happened to my callback"
 * has an answer after a 2xx or a rejection deleted the task.
 */
function taskDeliverySchema(kind: SqlDialectKind): string[] {
  return [
    `CREATE TABLE task_deliveries (
      id ${idColumn[kind]}, task_guid TEXT NOT NULL, task_epoch TEXT NOT NULL, attempt INTEGER NOT NULL,
      at TEXT NOT NULL, url TEXT NOT NULL, status_code INTEGER, error TEXT, outcome TEXT NOT NULL,
      duration_ms INTEGER NOT NULL)`,
    // One row per attempt: a second worker that somehow raced the lease cannot log the same attempt.
    'CREATE UNIQUE INDEX task_deliveries_attempt ON task_deliveries (task_guid, task_epoch, attempt)',
    'CREATE INDEX task_deliveries_at ON task_deliveries (at)',
  ];
}

export const bbsMigrations: readonly BbsMigration[] = [
  {
    version: 1,
    name: 'initial schema',
    statements: { sqlite: initialSchema('sqlite'), postgres: initialSchema('postgres') },
  },
  {
    version: 2,
    name: 'container history, API tokens, webhook subscriptions',
    statements: { sqlite: historySchema('sqlite'), postgres: historySchema('postgres') },
  },
  {
    version: 3,
    name: 'task completion callback delivery log',
    statements: { sqlite: taskDeliverySchema('sqlite'), postgres: taskDeliverySchema('postgres') },
  },
  {
    version: 4,
    name: 'cells say whether they run the model agents',
    statements: {
      sqlite: ['ALTER TABLE cells ADD COLUMN model_agent INTEGER NOT NULL DEFAULT 0'],
      postgres: ['ALTER TABLE cells ADD COLUMN model_agent INTEGER NOT NULL DEFAULT 0'],
    },
  },
  {
    version: 5,
    name: 'SQLite stores ActualLRPs in key order',
    statements: {
      // A rowid table keeps rows in insertion order, so the convergence read (every ActualLRP in key
      // order) looked each row up through the primary-key index: one B-tree descent per row, and a
      // random one once scaling and re-desiring have scattered an LRP's rows. WITHOUT ROWID stores
      // the rows in the primary key's own B-tree, so that read is one sequential walk.
      // PostgreSQL has no such choice (heap tables; its planner sorts or walks the index as it sees fit).
      sqlite: [
        `CREATE TABLE actual_lrps_by_key (${actualLrpColumns}) WITHOUT ROWID`,
        `INSERT INTO actual_lrps_by_key (${actualLrpColumnNames}) SELECT ${actualLrpColumnNames} FROM actual_lrps`,
        'DROP TABLE actual_lrps',
        'ALTER TABLE actual_lrps_by_key RENAME TO actual_lrps',
        'CREATE INDEX actual_lrps_cell ON actual_lrps (cell_id)',
      ],
      postgres: [],
    },
  },
  {
    version: 6,
    name: 'cells carry the token their rep demands',
    statements: {
      sqlite: ["ALTER TABLE cells ADD COLUMN rep_token TEXT NOT NULL DEFAULT ''"],
      postgres: ["ALTER TABLE cells ADD COLUMN rep_token TEXT NOT NULL DEFAULT ''"],
    },
  },
];

/**
 * Applies the missing migrations in one transaction the caller opened under the migration lock
 * (PostgreSQL: an advisory lock; SQLite: BEGIN IMMEDIATE), so two servers starting at once apply
 * each migration exactly once: the second waits, then finds nothing left to do.
 */
export async function applyMigrations(
  tx: Kysely<BbsDatabase>,
  kind: SqlDialectKind,
  now: string,
): Promise<number[]> {
  await sql`CREATE TABLE IF NOT EXISTS bbs_schema_migrations (
    version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)`.execute(tx);
  const done = new Set(
    (await tx.selectFrom('bbs_schema_migrations').select('version').execute()).map((r) => r.version),
  );
  const applied: number[] = [];
  for (const migration of bbsMigrations) {
    if (done.has(migration.version)) continue;
    for (const statement of migration.statements[kind]) await sql.raw(statement).execute(tx);
    await tx
      .insertInto('bbs_schema_migrations')
      .values({ version: migration.version, name: migration.name, applied_at: now })
      .execute();
    applied.push(migration.version);
  }
  return applied;
}
