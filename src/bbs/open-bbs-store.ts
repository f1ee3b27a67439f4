import { openPostgresBackend } from './sql/postgres-backend.js';
import { SqlBbsStore, type SqlBbsStoreOptions } from './sql/sql-bbs-store.js';
import { openSqliteBackend } from './sql/sqlite-backend.js';

export interface OpenBbsStoreOptions extends SqlBbsStoreOptions {
  /** PostgreSQL connections per server. */
  readonly poolSize?: number;
}

/**
 * Opens the BBS on `db`: a `postgres://` or `postgresql://` URL, or else a SQLite file path
 * (":memory:" for tests). Migrations are applied before it returns.
 */
export async function openBbsStore(db: string, options: OpenBbsStoreOptions = {}): Promise<SqlBbsStore> {
  const backend = isPostgresUrl(db)
    ? openPostgresBackend({
        url: db,
        ...(options.poolSize !== undefined ? { poolSize: options.poolSize } : {}),
      })
    : openSqliteBackend({ path: db });
  return SqlBbsStore.open(backend, options);
}

export function isPostgresUrl(db: string): boolean {
  return /^postgres(ql)?:\/\//.test(db);
}
