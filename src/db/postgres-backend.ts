import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { errnoCode } from '../core/index.js';
import { eventsChannel } from './event-log.js';
import { listenOnChannel } from './postgres-notifications.js';
import { type DbTables, numbered, type RawEventRow, type SqlBackend } from './sql-backend.js';

export interface PostgresBackendOptions {
  /** postgres://user@host/db, or postgres://user@/db?host=/socket/dir for a unix socket. */
  readonly url: string;
  readonly poolSize?: number;
  /**
   * SQL texts (already `$n`-numbered) sent as named prepared statements: the stores' per-CAS
   * statements, parsed and planned once per connection instead of on every CAS.
   */
  readonly preparedStatements?: Iterable<string>;
}

/**
 * Connections a server keeps to PostgreSQL. A transaction holds its connection for every round
 * trip it makes, and on a busy server most of its time is spent waiting for the server's event
 * loop to send the next statement: with pg's default of 10, desires waited for a connection
 * behind the cells' claims and starts (in a burst of 20,000 instances over 1,000 cells, 200
 * desires took 46 s with 10 and 15 s with 30; docs/performance.md, round 16). Thirty per server keeps two servers well under PostgreSQL's default max_connections (100).
 */
export const defaultPostgresPoolSize = 30;

/** Arbitrary but fixed: every berth server takes this advisory lock to migrate. */
const migrationLockKey = 0x62_65_72_74_68; // "berth"
const retryableCodes = new Set(['40001', '40P01']);

/**
 * PostgreSQL through a pg Pool. Writes run READ COMMITTED and lock the rows they read with
 * SELECT … FOR UPDATE, so a CAS is decided on the row's latest committed version; deadlocks and
 * serialization failures are retried a few times before they surface.
 */
export function openPostgresBackend(options: PostgresBackendOptions): SqlBackend {
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.poolSize ?? defaultPostgresPoolSize,
  });
  // An idle client losing its server must not crash the process; the next query reconnects.
  pool.on('error', () => {});
  const db = new Kysely<DbTables>({
    dialect: new PostgresDialect({ pool: preparingPool(pool, options.preparedStatements ?? []) }),
  });

  async function withRetry<T>(run: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await run();
      } catch (err) {
        if (attempt >= 5 || !retryableCodes.has(errnoCode(err) ?? '')) throw err;
        await new Promise((resolve) => setTimeout(resolve, attempt * 5 * Math.random()));
      }
    }
  }

  return {
    kind: 'postgres',
    db,
    lockRows: true,
    write: (fn) => withRetry(() => db.transaction().execute(fn)),
    read: (fn) =>
      withRetry(() =>
        db.transaction().setIsolationLevel('repeatable read').setAccessMode('read only').execute(fn),
      ),
    migrate: async (apply) => {
      await db.transaction().execute(async (tx) => {
        await sql`SELECT pg_advisory_xact_lock(${migrationLockKey})`.execute(tx);
        await apply(tx);
      });
    },
    async readEvents(tx, afterTxid, afterId, limit): Promise<RawEventRow[]> {
      // Ids are handed out at insert, commits land in another order. Reading only transactions
      // older than the oldest one still running (the snapshot's xmin) and ordering by (txid, id)
      // means no event can later appear before a cursor already handed out.
      const result = await sql<RawEventRow>`
        SELECT id, txid, type, data, created_at FROM events
        WHERE (txid, id) > (${afterTxid}, ${afterId})
          AND txid < pg_snapshot_xmin(pg_current_snapshot())::text::bigint
        ORDER BY txid, id LIMIT ${limit}`.execute(tx);
      return result.rows;
    },
    async headEvent(tx) {
      // The same visibility rule as readEvents: every transaction still running has a txid at or
      // past the snapshot's xmin, so each of its events sorts after the head returned here.
      const result = await sql<{ txid: string; id: string }>`
        SELECT txid, id FROM events
        WHERE txid < pg_snapshot_xmin(pg_current_snapshot())::text::bigint
        ORDER BY txid DESC, id DESC LIMIT 1`.execute(tx);
      const row = result.rows[0];
      return row ? { txid: Number(row.txid), id: Number(row.id) } : undefined;
    },
    async readRows(fn) {
      const client = await pool.connect();
      try {
        await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
        const result = await fn(
          async <T>(text: string, params: readonly unknown[], map: (row: unknown[]) => T) => {
            const res = await client.query<unknown[]>({
              text: numbered(text),
              values: [...params],
              rowMode: 'array',
            });
            return res.rows.map(map);
          },
        );
        await client.query('COMMIT');
        return result;
      } catch (err) {
        // The transaction's own error is the one to report; a ROLLBACK that fails on a broken
        // connection is answered by releasing the client, which the pool then discards.
        // catch-all: see above.
        await client.query('ROLLBACK').catch(() => {});
        throw err;
      } finally {
        client.release();
      }
    },
    isUniqueViolation: (err) => errnoCode(err) === '23505',
    listenEvents: (onPayload) => listenOnChannel(options.url, eventsChannel, onPayload),
    close: () => db.destroy(),
  };
}

/**
 * The pool kysely sees: the same connections, but the given statements go out as named
 * prepared statements, so PostgreSQL parses and plans each once per connection instead of on
 * every CAS. Everything else passes through unchanged.
 */
function preparingPool(pool: pg.Pool, prepared: Iterable<string>): pg.Pool {
  const names = new Map<string, string>();
  for (const text of prepared) if (!names.has(text)) names.set(text, `berth_${names.size}`);
  const wrap = (client: pg.PoolClient): pg.PoolClient => {
    const query = client.query.bind(client) as (config: pg.QueryConfig) => Promise<pg.QueryResult>;
    return new Proxy(client, {
      get(target, property, receiver) {
        if (property !== 'query') return Reflect.get(target, property, receiver);
        return (text: unknown, values?: unknown[]) => {
          const name = typeof text === 'string' ? names.get(text) : undefined;
          if (name) return query({ name, text: text as string, values: values ?? [] });
          return (target.query as (t: unknown, v?: unknown[]) => unknown)(text, values);
        };
      },
    });
  };
  return new Proxy(pool, {
    get(target, property, receiver) {
      if (property === 'connect') return async () => wrap(await target.connect());
      return Reflect.get(target, property, receiver);
    },
  });
}
