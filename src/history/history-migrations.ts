import { idColumn, type MigrationList, type SqlDialectKind } from '../db/index.js';

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
 * History's migrations. They are recorded in the BBS's ledger (`bbs_schema_migrations`, version 2)
 * because they shipped there: existing databases say so, and the runner checks that no two lists
 * sharing a ledger claim one version. A new history migration takes a version the BBS never used.
 */
export const historyMigrationList: MigrationList = {
  owner: 'history',
  ledger: 'bbs_schema_migrations',
  migrations: [
    {
      version: 2,
      name: 'container history, API tokens, webhook subscriptions',
      statements: { sqlite: historySchema('sqlite'), postgres: historySchema('postgres') },
    },
    {
      version: 13,
      name: 'API tokens may expire',
      statements: {
        // NULL: the token lasts until it is revoked, as every token made before this did.
        sqlite: ['ALTER TABLE api_tokens ADD COLUMN expires_at TEXT'],
        postgres: ['ALTER TABLE api_tokens ADD COLUMN expires_at TEXT'],
      },
    },
  ],
};
