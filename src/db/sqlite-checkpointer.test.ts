import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { startSqliteCheckpointer } from './sqlite-checkpointer.js';

describe('startSqliteCheckpointer', () => {
  let dir: string;
  let path: string;
  let database: Database.Database;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'berth-checkpointer-'));
    path = join(dir, 'db.sqlite3');
    database = new Database(path);
    database.pragma('journal_mode = WAL');
    database.pragma('synchronous = NORMAL');
    database.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT NOT NULL)');
  });
  afterEach(() => {
    if (database.open) database.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** About 12 MB in 300 commits: 3,000 pages, past SQLite's own threshold of 1,000. */
  function write(): void {
    const insert = database.prepare('INSERT INTO t (body) VALUES (?)');
    const ten = database.transaction(() => {
      for (let i = 0; i < 10; i++) insert.run('x'.repeat(4000));
    });
    for (let i = 0; i < 300; i++) ten();
  }

  it('copies the WAL into the database file from its thread, none of the commits doing it', async () => {
    const checkpointer = startSqliteCheckpointer(database, path, 20);
    try {
      assert.equal(database.pragma('wal_autocheckpoint', { simple: true }), 10_000, 'only a backstop left');
      const before = statSync(path).size;
      write();
      // The commits stayed under the backstop: whatever reaches the file, the thread copied.
      for (let i = 0; i < 250 && statSync(path).size < before + 10_000_000; i++) await sleep(20);
      assert.ok(statSync(path).size >= before + 10_000_000, `database file ${statSync(path).size} bytes`);
    } finally {
      await checkpointer.stop();
    }
    assert.equal(database.pragma('wal_autocheckpoint', { simple: true }), 1000, "SQLite's own again");
    assert.deepEqual(database.prepare('SELECT count(*) AS n FROM t').get(), { n: 3000 });
  });

  it('hands checkpoints back to the connection when its thread dies', async () => {
    const checkpointer = startSqliteCheckpointer(database, join(dir, 'missing.sqlite3'), 20);
    // The thread cannot open its file and ends; the writer must not be left without checkpoints.
    for (let i = 0; i < 250 && database.pragma('wal_autocheckpoint', { simple: true }) !== 1000; i++)
      await sleep(20);
    assert.equal(database.pragma('wal_autocheckpoint', { simple: true }), 1000);
    await checkpointer.stop();
  });
});
