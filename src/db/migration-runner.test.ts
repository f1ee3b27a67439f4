import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import { type MigrationList, openSqliteBackend, portable, runMigrations, type SqlBackend } from './index.js';

const at = new Date('2024-01-01T00:00:00.000Z');

function list(owner: string, ledger: string, versions: readonly number[]): MigrationList {
  return {
    owner,
    ledger,
    migrations: versions.map((version) => ({
      version,
      name: `${owner} ${version}`,
      statements: portable([`CREATE TABLE ${owner}_${version} (id INTEGER PRIMARY KEY)`]),
    })),
  };
}

async function ledgerRows(backend: SqlBackend, ledger: string): Promise<[number, string][]> {
  const result = await sql<{ version: number; name: string }>`
    SELECT version, name FROM ${sql.table(ledger)} ORDER BY version`.execute(backend.db);
  return result.rows.map((r) => [Number(r.version), r.name]);
}

async function tables(backend: SqlBackend): Promise<string[]> {
  const result = await sql<{ name: string }>`
    SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`.execute(
    backend.db,
  );
  return result.rows.map((r) => r.name);
}

describe('the migration runner', () => {
  it('applies each owner its missing versions, lists sharing a ledger interleaved, and nothing twice', async () => {
    const backend = openSqliteBackend({ path: ':memory:' });
    try {
      const first = await runMigrations(
        backend,
        [list('a', 'a_ledger', [1, 3]), list('b', 'a_ledger', [2])],
        at,
      );
      assert.deepEqual(first, { a: [1, 3], b: [2] });
      assert.deepEqual(await ledgerRows(backend, 'a_ledger'), [
        [1, 'a 1'],
        [2, 'b 2'],
        [3, 'a 3'],
      ]);
      // An owner opening alone later (history after the BBS) finds its versions already there.
      assert.deepEqual(await runMigrations(backend, [list('b', 'a_ledger', [2])], at), { b: [] });
      assert.deepEqual(await runMigrations(backend, [list('a', 'a_ledger', [1, 3, 4])], at), { a: [4] });
      assert.deepEqual(await tables(backend), ['a_1', 'a_3', 'a_4', 'a_ledger', 'b_2']);
    } finally {
      await backend.close();
    }
  });

  it('takes a ledger an older berth wrote by hand as it stands, applying only what it lacks', async () => {
    const backend = openSqliteBackend({ path: ':memory:' });
    try {
      // The bookkeeping exactly as every berth since the first has created it.
      await sql`CREATE TABLE old_ledger (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)`.execute(
        backend.db,
      );
      await sql`CREATE TABLE o_1 (id INTEGER PRIMARY KEY)`.execute(backend.db);
      await sql`INSERT INTO old_ledger (version, name, applied_at) VALUES (1, 'o 1', '2023-01-01T00:00:00.000Z')`.execute(
        backend.db,
      );
      assert.deepEqual(await runMigrations(backend, [list('o', 'old_ledger', [1, 2])], at), { o: [2] });
      assert.deepEqual(await ledgerRows(backend, 'old_ledger'), [
        [1, 'o 1'],
        [2, 'o 2'],
      ]);
    } finally {
      await backend.close();
    }
  });

  it('refuses two owners claiming one version of a ledger, before touching the database', async () => {
    const backend = openSqliteBackend({ path: ':memory:' });
    try {
      await assert.rejects(
        runMigrations(backend, [list('a', 'shared', [1, 2]), list('b', 'shared', [2])], at),
        (err: Error & { code?: string }) =>
          err.code === 'conflict' && /version 2 of shared/.test(err.message),
      );
      await assert.rejects(runMigrations(backend, [list('a', 'bad ledger; DROP', [1])], at), {
        code: 'invalid_argument',
      });
      assert.deepEqual(await tables(backend), []);
    } finally {
      await backend.close();
    }
  });

  it('rolls a failing migration back whole: no table, no ledger row', async () => {
    const backend = openSqliteBackend({ path: ':memory:' });
    try {
      const broken: MigrationList = {
        owner: 'x',
        ledger: 'x_ledger',
        migrations: [
          { version: 1, name: 'x 1', statements: portable(['CREATE TABLE x_1 (id INTEGER)', 'NOT SQL']) },
        ],
      };
      await assert.rejects(runMigrations(backend, [broken], at));
      assert.deepEqual(await tables(backend), []);
    } finally {
      await backend.close();
    }
  });
});
