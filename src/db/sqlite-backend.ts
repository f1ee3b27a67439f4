import { chmodSync, closeSync, constants, openSync, statSync } from 'node:fs';
import Database from 'better-sqlite3';
import { Kysely, type Kysely as KyselyType, type SqliteDatabase, SqliteDialect, sql } from 'kysely';
import { BerthError, errnoCode } from '../core/index.js';
import type { DbTables, RawEventRow, SqlBackend } from './sql-backend.js';
import { SqliteWriteBatches, type WriteBatchOptions } from './sqlite-write-batch.js';

export interface SqliteBackendOptions {
  /** A file path, or ":memory:" for tests. */
  readonly path: string;
  readonly busyTimeoutMs?: number;
  /** How writes are grouped into transactions (tests set the clock; mapError is the backend's). */
  readonly writeBatches?: Omit<WriteBatchOptions, 'mapError'>;
}

/**
 * The WAL is copied back into the database (a checkpoint, with an fsync of each file, on the
 * event loop of the commit that crosses the mark) once it holds this many pages. SQLite's 1,000
 * (4 MB) made a 20,000-instance burst checkpoint 239 times, 23 ms each: 5.5 s of the server's
 * loop. The same hot pages (the events table's tail, the indexes' leaves) are rewritten in the
 * WAL by every commit but copied once per checkpoint, so 10 times the mark did 36 checkpoints
 * in 2.5 s (docs/performance.md, round 24). Readers pay a larger WAL index, a few hash lookups.
 */
export const walCheckpointPages = 10_000;
/** After a checkpoint lets the WAL start over, its file is cut back to this (64 MiB). */
export const walSizeLimitBytes = 64 * 1024 * 1024;

/**
 * SQLite through better-sqlite3: one connection per process (kysely serializes on it), WAL so
 * readers in other processes never block the writer, busy_timeout so two servers on one file wait
 * for each other instead of failing, and BEGIN IMMEDIATE so a transaction takes the write lock
 * before it reads what it will change (a deferred one could fail upgrading its lock half-way).
 */
export function openSqliteBackend(options: SqliteBackendOptions): SqlBackend {
  if (options.path !== ':memory:' && options.path !== '') makeOwnerOnly(options.path);
  const database = new Database(options.path);
  database.pragma('journal_mode = WAL');
  database.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 10_000}`);
  // NORMAL in WAL mode: a power loss can drop the last commits but never corrupts the file.
  database.pragma('synchronous = NORMAL');
  database.pragma(`wal_autocheckpoint = ${walCheckpointPages}`);
  database.pragma(`journal_size_limit = ${walSizeLimitBytes}`);
  const statements = cachingStatements(database);
  const db = new Kysely<DbTables>({ dialect: new SqliteDialect({ database: statements }) });

  async function inTransaction<T>(begin: string, fn: (tx: KyselyType<DbTables>) => Promise<T>): Promise<T> {
    return db.connection().execute(async (conn) => {
      try {
        await sql.raw(begin).execute(conn);
      } catch (err) {
        throw busyError(err);
      }
      try {
        const result = await fn(conn);
        await sql.raw('COMMIT').execute(conn);
        return result;
      } catch (err) {
        if (database.inTransaction) await sql.raw('ROLLBACK').execute(conn);
        throw busyError(err);
      }
    });
  }

  // Writes of one turn of the event loop share a transaction (group commit; sqlite-write-batch.ts).
  // Holding kysely's connection (its mutex) makes direct use of the handle safe in a batch.
  const batches = new SqliteWriteBatches<KyselyType<DbTables>>(
    (drive) =>
      db.connection().execute((tx) =>
        drive({
          tx,
          exec: (statement) => {
            statements.prepare(statement).run([]);
          },
          inTransaction: () => database.inTransaction,
        }),
      ),
    { ...options.writeBatches, mapError: busyError },
  );

  return {
    kind: 'sqlite',
    db,
    lockRows: false,
    write: (fn) => batches.write(fn),
    read: (fn) => inTransaction('BEGIN', fn),
    migrate: async (apply) => {
      await inTransaction('BEGIN IMMEDIATE', apply);
    },
    async readEvents(tx, _afterTxid, afterId, limit): Promise<RawEventRow[]> {
      return tx
        .selectFrom('events')
        .select(['id', 'txid', 'type', 'data', 'created_at'])
        .where('id', '>', afterId)
        .orderBy('id')
        .limit(limit)
        .execute();
    },
    async headEvent(tx) {
      const row = await tx
        .selectFrom('events')
        .select(['id', 'txid'])
        .orderBy('id', 'desc')
        .limit(1)
        .executeTakeFirst();
      return row ? { txid: Number(row.txid), id: Number(row.id) } : undefined;
    },
    readRows: (fn) =>
      inTransaction('BEGIN', async () =>
        // Holding kysely's connection (its mutex) makes direct use of the handle safe here.
        fn(async <T>(text: string, params: readonly unknown[], map: (row: unknown[]) => T) => {
          const out: T[] = [];
          for (const row of statements.rawStatement(text).iterate(...params)) out.push(map(row as unknown[]));
          return out;
        }),
      ),
    isUniqueViolation: (err) => errnoCode(err)?.startsWith('SQLITE_CONSTRAINT') === true,
    close: () => db.destroy(),
  };
}

/**
 * kysely's SQLite driver prepares every statement anew; preparing costs about as much as running
 * a small statement. The query builder produces a handful of distinct SQL texts, so a small LRU of
 * prepared statements removes that cost from every CAS.
 */
function cachingStatements(
  database: Database.Database,
): SqliteDatabase & { rawStatement(text: string): Database.Statement } {
  const cache = new Map<string, Database.Statement>();
  const limit = 256;
  // One cache for both kinds, keyed apart: a statement in raw (array) mode stays in it.
  const statement = (text: string, raw: boolean): Database.Statement => {
    const key = `${raw ? 'a' : 'o'}${text}`;
    let cached = cache.get(key);
    if (cached) {
      cache.delete(key);
    } else {
      cached = database.prepare(text);
      if (raw) cached.raw(true);
      if (cache.size >= limit) cache.delete(cache.keys().next().value as string);
    }
    cache.set(key, cached);
    return cached;
  };
  return {
    close: () => database.close(),
    prepare: (text: string) => statement(text, false) as unknown as ReturnType<SqliteDatabase['prepare']>,
    rawStatement: (text: string) => statement(text, true),
  };
}

function busyError(err: unknown): unknown {
  const code = errnoCode(err);
  if (code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED') {
    return new BerthError('unavailable', 'The SQLite database is locked by another writer; try again', {
      sqlite_code: code,
    });
  }
  return err;
}

/**
 * The database holds every env value and token digest of the cluster: owner only (0600), the file
 * made so before SQLite opens it, since SQLite gives its -wal and -shm files the main file's mode.
 * Files left 0644 by an older berth are made 0600 here, each of them.
 */
function makeOwnerOnly(path: string): void {
  closeSync(openSync(path, constants.O_RDWR | constants.O_CREAT, 0o600));
  for (const file of [path, `${path}-wal`, `${path}-shm`, `${path}-journal`]) {
    try {
      if ((statSync(file).mode & 0o077) !== 0) chmodSync(file, 0o600);
    } catch (err) {
      if (errnoCode(err) !== 'ENOENT') throw err;
    }
  }
}
