export { type EventBody, EventLog, insertEvents } from './event-log.js';
export {
  idColumn,
  type MigrationList,
  portable,
  runMigrations,
  type SchemaMigration,
} from './migration-runner.js';
export {
  defaultPostgresPoolSize,
  openPostgresBackend,
  type PostgresBackendOptions,
} from './postgres-backend.js';
export {
  type DbTables,
  type EventRow,
  numbered,
  type RawEventRow,
  type RowQuery,
  type SqlBackend,
  type SqlDialectKind,
} from './sql-backend.js';
export { isPostgresUrl, type OpenSqlDatabaseOptions, openSqlDatabase, SqlDatabase } from './sql-database.js';
export { openSqliteBackend, type SqliteBackendOptions } from './sqlite-backend.js';
export { type ValuesUpdate, valuesUpdate } from './values-update.js';
