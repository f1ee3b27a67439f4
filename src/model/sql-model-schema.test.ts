import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { bbsMigrationList, openBbsStore } from '../bbs/index.js';
import { runMigrations } from '../db/index.js';
import { HistoryStore, historyMigrationList } from '../history/index.js';
import { desiredDefinition } from '../testing/bbs-fixtures.js';
import { modelMigrationList } from './sql-model-schema.js';
import { SqlModelTxnRunner } from './sql-model-txn-runner.js';

/**
 * bbs, history and the model each register their own migration list with db's one runner. The
 * database they leave must be the one the single bbs runner plus the model's copy left before:
 * same ledgers, same versions and names, same tables, so existing databases open unchanged.
 */
const ledgerBefore = {
  bbs_schema_migrations: [
    [1, 'initial schema'],
    [2, 'container history, API tokens, webhook subscriptions'],
    [3, 'task completion callback delivery log'],
    [4, 'cells say whether they run the model agents'],
    [5, 'SQLite stores ActualLRPs in key order'],
    [6, 'cells carry the token their rep demands'],
    [7, 'domains name the system that owns them'],
  ],
  model_schema_migrations: [[1, 'model entities, cleanups, systems, actions, lock rows']],
};

/** What berth has appended since (each list only appends): the ledgers a database has today. */
const ledgerNow = {
  bbs_schema_migrations: [
    ...ledgerBefore.bbs_schema_migrations,
    [8, 'named volumes pin instances to the cell that holds their data'],
    [9, "a cell's pass reads its instances' keys and tags from one index"],
    // History's, recorded in the BBS's ledger as its version 2 was.
    [13, 'API tokens may expire'],
  ],
  model_schema_migrations: [
    ...ledgerBefore.model_schema_migrations,
    [2, 'action lifetime: timeout, accepted/in_progress states, job outcomes'],
    [3, 'deploy history: who asked for each action, and what a rollback redeploys'],
  ],
};

function layout(file: string): { ledgers: Record<string, unknown[]>; tables: string[] } {
  const db = new Database(file, { readonly: true });
  try {
    const rows = (ledger: string) =>
      db.prepare(`SELECT version, name FROM ${ledger} ORDER BY version`).raw(true).all() as unknown[];
    return {
      ledgers: {
        bbs_schema_migrations: rows('bbs_schema_migrations'),
        model_schema_migrations: rows('model_schema_migrations'),
      },
      tables: db
        .prepare(
          "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
        )
        .pluck()
        .all() as string[],
    };
  } finally {
    db.close();
  }
}

describe('one migration runner, three owners', () => {
  const dir = mkdtempSync(join(tmpdir(), 'berth-schema-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('a new database records the versions and names the old runners recorded, with the same tables', async () => {
    const file = join(dir, 'new.sqlite3');
    const store = await openBbsStore(file);
    await HistoryStore.open(store.database);
    await SqlModelTxnRunner.open(store.backend);
    await store.close();
    const { ledgers, tables } = layout(file);
    assert.deepEqual(ledgers, ledgerNow);
    assert.deepEqual(tables, [
      'actual_lrps',
      'api_tokens',
      'bbs_schema_migrations',
      'cells',
      'container_history',
      'container_logs',
      'containers',
      'desired_lrps',
      'domains',
      'events',
      'leases',
      'model_actions',
      'model_cells',
      'model_cleanups',
      'model_locks',
      'model_meta',
      'model_relations',
      'model_schema_migrations',
      'model_scopes',
      'model_services',
      'model_system_services',
      'model_systems',
      'model_units',
      'start_requests',
      'stop_requests',
      'subscription_deliveries',
      'subscriptions',
      'task_deliveries',
      // Task outputs keep a ledger of their own (bbs/sql/task-output-store.ts).
      'task_output_chunks',
      'task_outputs',
      'task_outputs_schema_migrations',
      'tasks',
      'volume_pins',
    ]);
  });

  it('a database whose ledgers were written by the old runners opens with nothing to apply, its records kept', async () => {
    const file = join(dir, 'old.sqlite3');
    const store = await openBbsStore(file);
    await HistoryStore.open(store.database);
    await SqlModelTxnRunner.open(store.backend);
    await store.desireLRP(desiredDefinition('kept', 1));
    await store.close();
    // The old runners' bookkeeping, by hand: one applied_at for the whole BBS list (it ran in one
    // transaction, history's version 2 among the BBS's), rows inserted in version order; then what
    // the one runner appended since (its tables are in this file already).
    const db = new Database(file);
    db.exec('DELETE FROM bbs_schema_migrations');
    const insert = db.prepare(
      'INSERT INTO bbs_schema_migrations (version, name, applied_at) VALUES (?, ?, ?)',
    );
    for (const [version, name] of ledgerBefore.bbs_schema_migrations)
      insert.run(version, name, '2025-06-01T00:00:00.000Z');
    for (const [version, name] of ledgerNow.bbs_schema_migrations.slice(
      ledgerBefore.bbs_schema_migrations.length,
    ))
      insert.run(version, name, '2026-11-25T00:00:00.000Z');
    db.close();

    const reopened = await openBbsStore(file);
    try {
      const applied = await runMigrations(
        reopened.backend,
        [bbsMigrationList, historyMigrationList, modelMigrationList],
        new Date(),
      );
      assert.deepEqual(applied, { bbs: [], history: [], model: [] });
      assert.equal((await reopened.getDesiredLRP({ process_guid: 'kept' })).instances, 1);
    } finally {
      await reopened.close();
    }
    assert.deepEqual(layout(file).ledgers, ledgerNow);
  });
});
