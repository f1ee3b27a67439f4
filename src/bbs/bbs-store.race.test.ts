import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { desiredDefinition } from '../testing/bbs-store-contract.js';
import { type PostgresServer, postgresSkipReason, startPostgres } from '../testing/postgres-harness.js';
import { type BbsDatabase, openBbsStore } from './index.js';
import { bbsMigrations } from './sql/bbs-migrations.js';

const run = promisify(execFile);
const worker = fileURLToPath(new URL('../testing/cas-race-worker.js', import.meta.url));
const writers = 4;
const target = 120;

/**
 * Real writers in separate OS processes race on one record. Every version of the record must be
 * won by exactly one writer (no two CAS on the same tag both succeed) and the final count must
 * equal the number of wins (no lost update).
 */
async function race(db: string): Promise<void> {
  const setup = await openBbsStore(db);
  await setup.desireLRP({ ...desiredDefinition('race', 0), annotation: '0' });
  await setup.close();
  const outputs = await Promise.all(
    Array.from({ length: writers }, () => run(process.execPath, [worker, db, 'race', String(target)])),
  );
  const results = outputs.map((o) => JSON.parse(o.stdout) as { won: number[]; conflicts: number });
  const wins = results.flatMap((r) => r.won).sort((a, b) => a - b);
  assert.deepEqual(
    wins,
    Array.from({ length: target }, (_, i) => i),
    'each version won exactly once',
  );
  const check = await openBbsStore(db);
  const final = await check.getDesiredLRP({ process_guid: 'race' });
  await check.close();
  assert.equal(final.annotation, String(target));
  assert.equal(final.modification_tag.index, target);
}

/** Processes that open one fresh database at the same moment: each migration is applied once. */
async function migrateAtOnce(db: string): Promise<void> {
  const index = new URL('./index.js', import.meta.url).href;
  const script = `const m = await import(${JSON.stringify(index)}); const s = await m.openBbsStore(process.argv[1]); await s.close();`;
  await Promise.all(
    Array.from({ length: writers }, () => run(process.execPath, ['--input-type=module', '-e', script, db])),
  );
  const store = await openBbsStore(db);
  const versions = await store.backend.db
    .withTables<BbsDatabase>()
    .selectFrom('bbs_schema_migrations')
    .select('version')
    .execute();
  await store.close();
  assert.deepEqual(
    versions.map((v) => v.version),
    bbsMigrations.map((m) => m.version),
  );
}

describe('migrations when several servers start at once', () => {
  it('SQLite: BEGIN IMMEDIATE serializes them', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'berth-migrate-'));
    try {
      await migrateAtOnce(join(dir, 'bbs.sqlite3'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
  describe('PostgreSQL', { skip: postgresSkipReason() ?? false }, () => {
    let server: PostgresServer | undefined;
    after(async () => server?.stop());
    it('the advisory lock serializes them', async () => {
      server = await startPostgres('migrate');
      await migrateAtOnce(server.url);
    });
  });
});

describe('CAS under concurrent writer processes', () => {
  it('SQLite file, WAL, several processes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'berth-race-'));
    try {
      await race(join(dir, 'bbs.sqlite3'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  describe('PostgreSQL', { skip: postgresSkipReason() ?? false }, () => {
    let server: PostgresServer | undefined;
    after(async () => server?.stop());
    it('several processes, each with its own pool', async () => {
      server = await startPostgres('race');
      await race(server.url);
    });
  });
});
