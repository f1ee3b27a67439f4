import { type Kysely, sql } from 'kysely';
import { BerthError } from '../core/index.js';
import type { DbTables, SqlBackend, SqlDialectKind } from './sql-backend.js';

/** A versioned schema change. Migrations only ever append; a released one is never edited. */
export interface SchemaMigration {
  readonly version: number;
  readonly name: string;
  readonly statements: Readonly<Record<SqlDialectKind, readonly string[]>>;
}

/**
 * One owner's migrations (bbs, history, model keep their own lists and table definitions) and the
 * ledger table that records which versions a database has. Two lists may share a ledger when
 * their versions are disjoint: history's tables shipped as version 2 of `bbs_schema_migrations`,
 * and existing databases record them there.
 */
export interface MigrationList {
  readonly owner: string;
  readonly ledger: string;
  readonly migrations: readonly SchemaMigration[];
}

/** An id column that grows and is never reused: an event id seen once is never handed out again. */
export const idColumn: Readonly<Record<SqlDialectKind, string>> = {
  sqlite: 'INTEGER PRIMARY KEY AUTOINCREMENT',
  postgres: 'BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY',
};

/** The same DDL on both dialects (the model writes only portable statements). */
export function portable(statements: readonly string[]): SchemaMigration['statements'] {
  return { sqlite: statements, postgres: statements };
}

/** A ledger's table, as every berth since the first has created it. */
type LedgerTables = Record<string, { version: number; name: string; applied_at: string }>;

/**
 * Applies the missing migrations of `lists` in one transaction under the backend's migration lock
 * (PostgreSQL: an advisory lock; SQLite: BEGIN IMMEDIATE), so two servers starting at once apply
 * each migration exactly once: the second waits, then finds nothing left to do. Returns the
 * versions applied, per owner, in the order they ran.
 */
export async function runMigrations(
  backend: SqlBackend,
  lists: readonly MigrationList[],
  now: Date,
): Promise<Record<string, number[]>> {
  assertDisjoint(lists);
  const applied: Record<string, number[]> = {};
  await backend.migrate(async (tx) => {
    for (const list of lists)
      applied[list.owner] = await applyList(tx, backend.kind, list, now.toISOString());
  });
  return applied;
}

async function applyList(
  tx: Kysely<DbTables>,
  kind: SqlDialectKind,
  list: MigrationList,
  now: string,
): Promise<number[]> {
  const db = tx.withTables<LedgerTables>();
  const ledger = list.ledger;
  await sql`CREATE TABLE IF NOT EXISTS ${sql.table(ledger)} (
    version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)`.execute(db);
  const done = new Set((await db.selectFrom(ledger).select('version').execute()).map((r) => r.version));
  const applied: number[] = [];
  for (const migration of [...list.migrations].sort((a, b) => a.version - b.version)) {
    if (done.has(migration.version)) continue;
    for (const statement of migration.statements[kind]) await sql.raw(statement).execute(db);
    await db
      .insertInto(ledger)
      .values({ version: migration.version, name: migration.name, applied_at: now })
      .execute();
    applied.push(migration.version);
  }
  return applied;
}

/** Lists that share a ledger must not claim the same version: each would think it applied. */
function assertDisjoint(lists: readonly MigrationList[]): void {
  const seen = new Map<string, string>();
  for (const list of lists) {
    if (!/^[a-z_]+$/.test(list.ledger)) {
      throw new BerthError('invalid_argument', `Invalid migration ledger "${list.ledger}"`, {
        field: 'ledger',
      });
    }
    for (const migration of list.migrations) {
      const key = `${list.ledger}:${migration.version}`;
      const other = seen.get(key);
      if (other !== undefined && other !== list.owner) {
        throw new BerthError(
          'conflict',
          `Cannot migrate: version ${migration.version} of ${list.ledger} is claimed by ${other} and ${list.owner}`,
          { ledger: list.ledger, version: migration.version },
        );
      }
      seen.set(key, list.owner);
    }
  }
}
