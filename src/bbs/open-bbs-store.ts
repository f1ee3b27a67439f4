import { openSqlDatabase } from '../db/index.js';
import { preparedPostgresStatements } from './sql/hot-statements.js';
import { SqlBbsStore, type SqlBbsStoreOptions } from './sql/sql-bbs-store.js';

export interface OpenBbsStoreOptions extends SqlBbsStoreOptions {
  /** PostgreSQL connections per server. */
  readonly poolSize?: number;
}

/**
 * Opens the BBS on `db`: a `postgres://` or `postgresql://` URL, or else a SQLite file path
 * (":memory:" for tests). The BBS's migrations are applied before it returns; history and the
 * model migrate their own tables when they open on `store.database`.
 */
export async function openBbsStore(db: string, options: OpenBbsStoreOptions = {}): Promise<SqlBbsStore> {
  const database = openSqlDatabase(db, {
    ...(options.poolSize !== undefined ? { poolSize: options.poolSize } : {}),
    preparedStatements: preparedPostgresStatements,
  });
  return SqlBbsStore.open(database, options);
}

export { isPostgresUrl } from '../db/index.js';
