import { idColumn, type MigrationList, type SchemaMigration, type SqlDialectKind } from '../../db/index.js';

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

/**
 * The BBS's migrations. Version 2 is history's (src/history/history-migrations.ts): it shipped in
 * this ledger, and existing databases record it here.
 */
export const bbsMigrations: readonly SchemaMigration[] = [
  {
    version: 1,
    name: 'initial schema',
    statements: { sqlite: initialSchema('sqlite'), postgres: initialSchema('postgres') },
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
  {
    version: 7,
    name: 'domains name the system that owns them',
    statements: {
      // NULL: nobody's; the public API refuses changes to an owned domain's LRPs and tasks.
      sqlite: ['ALTER TABLE domains ADD COLUMN owner TEXT'],
      postgres: ['ALTER TABLE domains ADD COLUMN owner TEXT'],
    },
  },
  {
    version: 8,
    name: 'named volumes pin instances to the cell that holds their data',
    statements: {
      // One row per (domain, volume, instance index): the cell where that volume's data lives.
      sqlite: [
        `CREATE TABLE volume_pins (
          domain TEXT NOT NULL, volume TEXT NOT NULL, idx INTEGER NOT NULL, cell_id TEXT NOT NULL,
          created_at TEXT NOT NULL, PRIMARY KEY (domain, volume, idx))`,
      ],
      postgres: [
        `CREATE TABLE volume_pins (
          domain TEXT NOT NULL, volume TEXT NOT NULL, idx INTEGER NOT NULL, cell_id TEXT NOT NULL,
          created_at TEXT NOT NULL, PRIMARY KEY (domain, volume, idx))`,
      ],
    },
  },
  {
    version: 9,
    name: "a cell's pass reads its instances' keys and tags from one index",
    statements: {
      // Every pass of every cell reads its ActualLRPs' keys and tags for its digest
      // (cell-pass-reads.ts). Through an index on cell_id alone that was one primary-key descent
      // per instance; this index holds all they need (SQLite's indexes of a WITHOUT ROWID table
      // carry the primary key). Each CAS, which moves the tag, now updates it too.
      sqlite: [
        'CREATE INDEX actual_lrps_cell_tags ON actual_lrps (cell_id, tag_epoch, tag_index)',
        'DROP INDEX actual_lrps_cell',
      ],
      // Not on PostgreSQL: a tag in an index would make every CAS a non-HOT update (new entries
      // in every index of the table), and its heap fetches are what SQLite's descents were not.
      postgres: [],
    },
  },
];

/** What SqlBbsStore.open registers with the db layer's migration runner. */
export const bbsMigrationList: MigrationList = {
  owner: 'bbs',
  ledger: 'bbs_schema_migrations',
  migrations: bbsMigrations,
};
