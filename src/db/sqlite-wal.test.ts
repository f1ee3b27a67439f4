import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { sql } from 'kysely';
import type { SqlBackend } from './sql-backend.js';
import { openSqliteBackend, walCheckpointPages } from './sqlite-backend.js';

const pageBytes = 4096;

/**
 * The server's SQLite file checkpoints its WAL at `walCheckpointPages`, not at SQLite's 1,000
 * pages: a burst rewrites the same hot pages in every commit, and each checkpoint (an fsync of
 * both files on the event loop) copies them once. Measured on a real file: the WAL's size says
 * when the checkpoint ran, and a second connection sees every row whichever file holds it.
 */
describe("the SQLite backend's WAL", () => {
  let dir: string;
  let path: string;
  let backend: SqlBackend;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'berth-sqlite-wal-'));
    path = join(dir, 'db.sqlite3');
    backend = openSqliteBackend({ path });
    await sql`CREATE TABLE blob (id INTEGER PRIMARY KEY, body BLOB)`.execute(backend.db);
  });
  after(async () => {
    await backend.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Commits `pages` pages of new rows, one page a row, `perCommit` rows a commit. */
  async function write(pages: number, perCommit: number): Promise<void> {
    const body = Buffer.alloc(pageBytes - 200, 7);
    for (let done = 0; done < pages; done += perCommit) {
      await backend.write(async (tx) => {
        for (let i = 0; i < perCommit; i++) await sql`INSERT INTO blob (body) VALUES (${body})`.execute(tx);
      });
    }
  }

  const walBytes = () => statSync(`${path}-wal`).size;

  it("holds more than SQLite's 1,000 pages before it checkpoints, and every row is readable", async () => {
    await write(3_000, 50);
    // Had it checkpointed at 1,000 pages, the WAL would have started over and stayed near 4 MB.
    assert.ok(walBytes() > 2_500 * pageBytes, `the WAL holds the 3,000 pages (${walBytes()} bytes)`);
    const reader = new Database(path, { readonly: true });
    try {
      assert.equal((reader.prepare('SELECT count(*) AS n FROM blob').get() as { n: number }).n, 3_000);
    } finally {
      reader.close();
    }
  });

  it('checkpoints at its mark, and the WAL then starts over', async () => {
    // Past the mark: the commit that crosses it checkpoints, and the next write starts the WAL over.
    await write(walCheckpointPages, 100);
    await write(100, 100);
    const other = new Database(path);
    try {
      // A passive checkpoint of its own tells how many frames the WAL holds now.
      const [result] = other.pragma('wal_checkpoint(PASSIVE)') as { log: number }[];
      assert.ok(
        (result?.log ?? Number.POSITIVE_INFINITY) < walCheckpointPages,
        `the WAL holds only what came after the checkpoint, not all 13,000 pages (${result?.log} frames)`,
      );
    } finally {
      other.close();
    }
  });
});
