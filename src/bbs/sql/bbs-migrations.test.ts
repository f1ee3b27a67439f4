import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { desiredDefinition } from '../../testing/bbs-store-contract.js';
import { type BbsDatabase, openBbsStore } from '../index.js';
import { bbsMigrations } from './bbs-migrations.js';
import { idlePassSql } from './cell-pass-reads.js';

const keyOrderRead =
  'SELECT process_guid, idx, state, since FROM actual_lrps ORDER BY process_guid, idx, evacuating';

/** How SQLite runs `query` with `params`: its query plan's details, joined. */
function queryPlan(db: Database.Database, query: string, ...params: unknown[]): string {
  return db
    .prepare(`EXPLAIN QUERY PLAN ${query}`)
    .all(...params)
    .map((row) => (row as { detail: string }).detail)
    .join('; ');
}

/** What SQLite says about the actual_lrps table: its DDL and how it runs the key-order read. */
function actualLrpsLayout(file: string): { ddl: string; plan: string; indexes: string[] } {
  const db = new Database(file, { readonly: true });
  try {
    const ddl = db
      .prepare("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'actual_lrps'")
      .pluck()
      .get();
    const plan = queryPlan(db, keyOrderRead);
    const indexes = db
      .prepare(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'actual_lrps' ORDER BY name",
      )
      .pluck()
      .all() as string[];
    return { ddl: String(ddl), plan, indexes };
  } finally {
    db.close();
  }
}

describe('migration 5: SQLite stores ActualLRPs in key order', () => {
  const dir = mkdtempSync(join(tmpdir(), 'berth-migration5-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('a new database reads ActualLRPs in key order without an index lookup per row', async () => {
    const file = join(dir, 'new.sqlite3');
    await (await openBbsStore(file)).close();
    const layout = actualLrpsLayout(file);
    assert.match(layout.ddl, /WITHOUT ROWID/);
    assert.equal(layout.plan, 'SCAN actual_lrps');
    assert.deepEqual(layout.indexes, ['actual_lrps_cell_tags']);
  });

  it('rebuilds a version-4 table with every record, evacuating copies included, unchanged', async () => {
    const file = join(dir, 'v4.sqlite3');
    const store = await openBbsStore(file);
    await store.desireLRP(desiredDefinition('web', 3));
    await store.desireLRP(desiredDefinition('api', 2));
    const [web0, web1] = await store.listActualLRPs({ process_guid: 'web' });
    assert.ok(web0 && web1);
    const net = { address: '10.0.0.5', ports: [{ container_port: 8080, host_port: 61001 }] };
    await store.startActualLRP({
      ...web0,
      expected: web0.modification_tag,
      instance_key: { instance_guid: 'i-0', cell_id: 'cell-a' },
      net_info: net,
    });
    const running = await store.startActualLRP({
      ...web1,
      expected: web1.modification_tag,
      instance_key: { instance_guid: 'i-1', cell_id: 'cell-a' },
      net_info: net,
    });
    await store.evacuateRunningActualLRP({
      ...running,
      expected: running.modification_tag,
      instance_key: { instance_guid: 'i-1', cell_id: 'cell-a' },
      net_info: net,
    });
    const before = (await store.readSnapshot()).actual_lrps;
    assert.equal(before.filter((a) => a.evacuating).length, 1);
    await store.close();

    // Turn the file back into what version 4 left: the rowid table of migration 1, and no version 5
    // (nor 9, whose index goes with the table).
    const v1Table = bbsMigrations[0]?.statements.sqlite.find((s) => s.startsWith('CREATE TABLE actual_lrps'));
    assert.ok(v1Table);
    const db = new Database(file);
    db.transaction(() => {
      db.exec('ALTER TABLE actual_lrps RENAME TO actual_lrps_v5');
      db.exec(v1Table);
      db.exec('INSERT INTO actual_lrps SELECT * FROM actual_lrps_v5');
      db.exec('DROP TABLE actual_lrps_v5');
      db.exec('CREATE INDEX actual_lrps_cell ON actual_lrps (cell_id)');
      db.exec('DELETE FROM bbs_schema_migrations WHERE version IN (5, 9)');
    })();
    db.close();
    const v4 = actualLrpsLayout(file);
    assert.doesNotMatch(v4.ddl, /WITHOUT ROWID/);
    assert.match(v4.plan, /USING INDEX sqlite_autoindex_actual_lrps_1/);

    const reopened = await openBbsStore(file);
    try {
      const versions = await reopened.backend.db
        .withTables<BbsDatabase>()
        .selectFrom('bbs_schema_migrations')
        .select('version')
        .execute();
      assert.ok(versions.some((v) => v.version === 5));
      assert.deepEqual((await reopened.readSnapshot()).actual_lrps, before);
      // The table still works as the store's: a CAS on a migrated record and a scale-down.
      const web2 = before.find((a) => a.process_guid === 'web' && a.index === 2);
      assert.ok(web2);
      await reopened.claimActualLRP({
        ...web2,
        expected: web2.modification_tag,
        instance_key: { instance_guid: 'i-2', cell_id: 'cell-b' },
      });
      await reopened.updateDesiredLRP({ process_guid: 'api', update: { instances: 1 } });
      assert.equal((await reopened.listActualLRPs({ process_guid: 'api' })).length, 1);
      assert.equal((await reopened.listActualLRPs({ cell_id: 'cell-b' })).length, 1);
    } finally {
      await reopened.close();
    }
    const v5 = actualLrpsLayout(file);
    assert.match(v5.ddl, /WITHOUT ROWID/);
    assert.equal(v5.plan, 'SCAN actual_lrps');
    assert.deepEqual(v5.indexes, ['actual_lrps_cell_tags']);
  });
});

describe("migration 9: a cell's pass reads its instances' keys and tags from one index", () => {
  const dir = mkdtempSync(join(tmpdir(), 'berth-migration9-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const digestPlan = (file: string) => {
    const db = new Database(file, { readonly: true });
    try {
      return queryPlan(db, idlePassSql.actualTags, 'cell-a');
    } finally {
      db.close();
    }
  };

  it('a version-8 database gets the covering index; the pass digest reads only it, and is what it was', async () => {
    const file = join(dir, 'v8.sqlite3');
    const store = await openBbsStore(file);
    await store.desireLRP(desiredDefinition('web', 3));
    for (const actual of await store.listActualLRPs({ process_guid: 'web' }))
      await store.claimActualLRP({
        ...actual,
        expected: actual.modification_tag,
        instance_key: { instance_guid: `i-${actual.index}`, cell_id: 'cell-a' },
      });
    const pass = await store.cellPass({ cell_id: 'cell-a', stop_limit: 10, visibility_ms: 1_000 });
    assert.equal(pass.actual_lrps.length, 3);
    await store.close();
    assert.equal(
      digestPlan(file),
      'SEARCH actual_lrps USING COVERING INDEX actual_lrps_cell_tags (cell_id=?)',
    );

    // What version 8 left: the index on cell_id alone.
    const db = new Database(file);
    db.transaction(() => {
      db.exec('DROP INDEX actual_lrps_cell_tags');
      db.exec('CREATE INDEX actual_lrps_cell ON actual_lrps (cell_id)');
      db.exec('DELETE FROM bbs_schema_migrations WHERE version = 9');
    })();
    db.close();
    assert.equal(digestPlan(file), 'SEARCH actual_lrps USING INDEX actual_lrps_cell (cell_id=?)');

    const reopened = await openBbsStore(file);
    try {
      const again = await reopened.cellPass({
        cell_id: 'cell-a',
        stop_limit: 10,
        visibility_ms: 1_000,
        known_digest: pass.digest,
      });
      assert.equal(again.unchanged, true, 'the digest a rep held before the upgrade still matches');
    } finally {
      await reopened.close();
    }
    assert.equal(
      digestPlan(file),
      'SEARCH actual_lrps USING COVERING INDEX actual_lrps_cell_tags (cell_id=?)',
    );
    assert.deepEqual(actualLrpsLayout(file).indexes, ['actual_lrps_cell_tags']);
  });
});
