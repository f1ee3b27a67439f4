import { EventLog, insertEventSqlFor } from './event-log.js';
import { type MigrationList, runMigrations } from './migration-runner.js';
import { openPostgresBackend } from './postgres-backend.js';
import type { SqlBackend } from './sql-backend.js';
import { openSqliteBackend } from './sqlite-backend.js';

/**
 * One open database as every store on it shares it: the backend (connections, transactions), the
 * one event writer, and the one migration runner. bbs, history and the model each take this handle
 * and register their own migration list; none reaches into another's store for it.
 */
export class SqlDatabase {
  readonly backend: SqlBackend;
  readonly events: EventLog;

  constructor(backend: SqlBackend) {
    this.backend = backend;
    this.events = new EventLog(backend);
  }

  /** Applies an owner's missing migrations under the database's one migration lock. */
  async migrate(lists: readonly MigrationList[], now: Date = new Date()): Promise<Record<string, number[]>> {
    return runMigrations(this.backend, lists, now);
  }

  async close(): Promise<void> {
    await this.events.close();
    return this.backend.close();
  }
}

export interface OpenSqlDatabaseOptions {
  /** PostgreSQL connections per server. */
  readonly poolSize?: number;
  /** PostgreSQL: SQL texts worth a named prepared statement (the event insert always is). */
  readonly preparedStatements?: Iterable<string>;
}

/**
 * Opens `url`: a `postgres://` or `postgresql://` URL, or else a SQLite file path (":memory:" for
 * tests). No migration runs here; each owner migrates its own tables.
 */
export function openSqlDatabase(url: string, options: OpenSqlDatabaseOptions = {}): SqlDatabase {
  const backend = isPostgresUrl(url)
    ? openPostgresBackend({
        url,
        ...(options.poolSize !== undefined ? { poolSize: options.poolSize } : {}),
        preparedStatements: [insertEventSqlFor('postgres'), ...(options.preparedStatements ?? [])],
      })
    : openSqliteBackend({ path: url });
  return new SqlDatabase(backend);
}

export function isPostgresUrl(url: string): boolean {
  return /^postgres(ql)?:\/\//.test(url);
}
