import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { type Kysely, sql } from 'kysely';
import type { DbTables, SqlBackend } from './sql-backend.js';
import { openSqliteBackend } from './sqlite-backend.js';

/** The values in table `t`, in order, as `db` (a connection of its own) sees them committed. */
function valuesOf(db: Database.Database): string[] {
  return (db.prepare('SELECT v FROM t ORDER BY v').all() as { v: string }[]).map((row) => row.v);
}

/**
 * Group commit on the real SQLite backend: the writes of one turn share a transaction. A second
 * connection on the same file (as another server's, or `sqlite3`'s) tells what is committed.
 */
describe('SQLite writes of one turn commit together', () => {
  let dir: string;
  let backend: SqlBackend;
  let observer: Database.Database;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'berth-write-batch-'));
    const path = join(dir, 'db.sqlite3');
    // A clock that never moves: the batches here end with their turn (or their size) only.
    backend = openSqliteBackend({ path, writeBatches: { now: () => 0 } });
    await sql`CREATE TABLE t (v TEXT PRIMARY KEY)`.execute(backend.db);
    await sql`CREATE TABLE parent (id INTEGER PRIMARY KEY)`.execute(backend.db);
    await sql`CREATE TABLE child (parent_id INTEGER REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)`.execute(
      backend.db,
    );
    await sql`PRAGMA foreign_keys = ON`.execute(backend.db);
    observer = new Database(path, { readonly: true });
  });

  after(async () => {
    observer.close();
    await backend.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const committed = (): string[] => valuesOf(observer);
  const insert = (tx: Kysely<DbTables>, v: string) => sql`INSERT INTO t (v) VALUES (${v})`.execute(tx);
  const clear = () => backend.write((tx) => sql`DELETE FROM t`.execute(tx));

  it('runs each write after the ones before it, and settles each only once all are committed', async () => {
    await clear();
    const seenInside: string[][] = [];
    const seenAfter: string[][] = [];
    const writes = ['a', 'b', 'c'].map((v) =>
      backend
        .write(async (tx) => {
          await insert(tx, v);
          seenInside.push(committed());
          const mine = await sql<{ n: number }>`SELECT count(*) AS n FROM t`.execute(tx);
          return mine.rows[0]?.n;
        })
        .then((n) => {
          seenAfter.push(committed());
          return n;
        }),
    );
    // Each saw the ones before it (as after their commits), in the order they came.
    assert.deepEqual(await Promise.all(writes), [1, 2, 3]);
    // Nothing was committed while the batch ran: one transaction.
    assert.deepEqual(seenInside, [[], [], []]);
    // Every caller learns of its write only when all of it is on disk.
    assert.deepEqual(seenAfter, [
      ['a', 'b', 'c'],
      ['a', 'b', 'c'],
      ['a', 'b', 'c'],
    ]);
  });

  it('rolls back only the write that failed; the others of its batch commit', async () => {
    await clear();
    const results = await Promise.allSettled([
      backend.write((tx) => insert(tx, 'kept-1')),
      backend.write(async (tx) => {
        await insert(tx, 'undone');
        throw new Error('the handler refused');
      }),
      // A statement error too: a duplicate key.
      backend.write(async (tx) => {
        await insert(tx, 'undone-2');
        await insert(tx, 'kept-1');
      }),
      backend.write((tx) => insert(tx, 'kept-2')),
    ]);
    assert.deepEqual(
      results.map((r) => r.status),
      ['fulfilled', 'rejected', 'rejected', 'fulfilled'],
    );
    assert.match(String((results[1] as PromiseRejectedResult).reason), /the handler refused/);
    assert.ok(backend.isUniqueViolation((results[2] as PromiseRejectedResult).reason));
    assert.deepEqual(committed(), ['kept-1', 'kept-2']);
  });

  it('fails every write of the batch, and keeps none, when its COMMIT fails', async () => {
    await clear();
    const results = await Promise.allSettled([
      backend.write((tx) => insert(tx, 'lost-1')),
      // Deferred foreign keys are checked at COMMIT: this member passes, the COMMIT fails.
      backend.write((tx) => sql`INSERT INTO child (parent_id) VALUES (42)`.execute(tx)),
      backend.write((tx) => insert(tx, 'lost-2')),
    ]);
    assert.deepEqual(
      results.map((r) => r.status),
      ['rejected', 'rejected', 'rejected'],
    );
    assert.match(String((results[0] as PromiseRejectedResult).reason), /FOREIGN KEY/);
    assert.deepEqual(committed(), []);
    assert.equal((observer.prepare('SELECT count(*) AS n FROM child').get() as { n: number }).n, 0);
    // The connection is usable again: the next write commits.
    await backend.write((tx) => insert(tx, 'after'));
    assert.deepEqual(committed(), ['after']);
  });

  it('starts a new transaction for writes of a later turn, and for more than a batch holds', async () => {
    await clear();
    let firstRan!: () => void;
    const ran = new Promise<void>((resolve) => {
      firstRan = resolve;
    });
    const first = backend.write(async (tx) => {
      await insert(tx, 'turn-1');
      firstRan();
    });
    await ran;
    // The batch began its turn before its first write ran: this callback comes after that turn.
    let seenNextTurn: string[] | undefined;
    const second = new Promise<void>((resolve, reject) =>
      setImmediate(() => {
        backend
          .write(async (tx) => {
            await insert(tx, 'turn-2');
            seenNextTurn = committed();
          })
          .then(resolve, reject);
      }),
    );
    await Promise.all([first, second]);
    assert.deepEqual(seenNextTurn, ['turn-1']);

    await clear();
    const names = Array.from({ length: 300 }, (_, i) => `n${String(i).padStart(3, '0')}`);
    const seen = new Map<string, number>();
    await Promise.all(
      names.map((v) =>
        backend.write(async (tx) => {
          await insert(tx, v);
          seen.set(v, committed().length);
        }),
      ),
    );
    assert.equal(committed().length, 300);
    // The first batch took 256 writes; the 257th saw them committed.
    assert.equal(seen.get('n000'), 0);
    assert.equal(seen.get('n255'), 0);
    assert.equal(seen.get('n256'), 256);
  });

  it('commits a batch open for maxOpenMs as soon as its running write ends', async () => {
    const path = join(dir, 'timed.sqlite3');
    let clock = 0;
    const timed = openSqliteBackend({ path, writeBatches: { now: () => clock, maxOpenMs: 5 } });
    const look = new Database(path, { readonly: true, fileMustExist: false });
    try {
      await sql`CREATE TABLE t (v TEXT PRIMARY KEY)`.execute(timed.db);
      const seen = new Map<string, string[]>();
      const write = (v: string, advance: number) =>
        timed.write(async (tx) => {
          await insert(tx, v);
          seen.set(v, valuesOf(look));
          clock += advance;
        });
      // All in one turn: the second ends 5 ms after the batch opened, so the third starts anew.
      await Promise.all([write('a', 1), write('b', 4), write('c', 0), write('d', 0)]);
      assert.deepEqual(Object.fromEntries(seen), { a: [], b: [], c: ['a', 'b'], d: ['a', 'b'] });
    } finally {
      look.close();
      await timed.close();
    }
  });

  it('lets a read queued behind a batch see the batch committed', async () => {
    await clear();
    const write = backend.write((tx) => insert(tx, 'before-read'));
    const read = backend.read(async (tx) => (await sql<{ v: string }>`SELECT v FROM t`.execute(tx)).rows);
    await write;
    assert.deepEqual(await read, [{ v: 'before-read' }]);
  });
});

/**
 * kill -9 of the writing process: a batch is one transaction, so it is all or nothing, and every
 * write a caller was told of is on disk.
 */
describe('SQLite write batches under kill -9', () => {
  const backendUrl = new URL('./sqlite-backend.js', import.meta.url).href;
  const kyselyUrl = import.meta.resolve('kysely');

  /** Runs `body` in a child with `backend` open on `path` and `sql` imported; resolves with its output once it died. */
  const child = (path: string, body: string, killAfterLines?: number) =>
    new Promise<{ lines: string[]; signal: NodeJS.Signals | null }>((resolve, reject) => {
      const script = `
        const { openSqliteBackend } = await import(${JSON.stringify(backendUrl)});
        const { sql } = await import(${JSON.stringify(kyselyUrl)});
        const backend = openSqliteBackend({ path: ${JSON.stringify(path)}, writeBatches: { now: () => 0 } });
        await sql\`CREATE TABLE IF NOT EXISTS t (v TEXT PRIMARY KEY)\`.execute(backend.db);
        const insert = (tx, v) => sql\`INSERT INTO t (v) VALUES (\${v})\`.execute(tx);
        ${body}`;
      const proc = spawn(process.execPath, ['--input-type=module', '-e', script], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      const lines: string[] = [];
      let partial = '';
      proc.stdout.setEncoding('utf8').on('data', (chunk: string) => {
        const parts = (partial + chunk).split('\n');
        partial = parts.pop() ?? '';
        lines.push(...parts);
        if (killAfterLines !== undefined && lines.length >= killAfterLines) proc.kill('SIGKILL');
      });
      proc.on('error', reject);
      proc.on('exit', (_code, signal) => resolve({ lines, signal }));
    });

  const rows = (path: string): string[] => {
    const db = new Database(path, { readonly: true });
    try {
      return valuesOf(db);
    } finally {
      db.close();
    }
  };

  let dir: string;
  let path: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'berth-write-batch-kill-'));
    path = join(dir, 'db.sqlite3');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('keeps none of a batch killed before its COMMIT, and every batch committed before it', async () => {
    const { lines, signal } = await child(
      path,
      `await backend.write((tx) => insert(tx, 'committed'));
      console.log('committed');
      // Three writes of one turn, one batch: the process dies inside the third.
      await Promise.all([
        backend.write((tx) => insert(tx, 'lost-1')),
        backend.write((tx) => insert(tx, 'lost-2')),
        backend.write(async (tx) => {
          await insert(tx, 'lost-3');
          process.kill(process.pid, 'SIGKILL');
        }),
      ]);
      console.log('not reached');`,
    );
    assert.equal(signal, 'SIGKILL');
    assert.deepEqual(lines, ['committed']);
    assert.deepEqual(rows(path), ['committed']);
  });

  it('has every write it answered on disk when killed at any moment', async () => {
    // Twenty writes a turn, each printed once its caller is answered; killed after 500 answers.
    const { lines, signal } = await child(
      path,
      `for (let round = 0; ; round++) {
        await Promise.all(Array.from({ length: 20 }, (_, i) => {
          const v = 'r' + String(round).padStart(5, '0') + '-' + String(i).padStart(2, '0');
          return backend.write((tx) => insert(tx, v)).then(() => process.stdout.write(v + '\\n'));
        }));
      }`,
      500,
    );
    assert.equal(signal, 'SIGKILL');
    const kept = new Set(rows(path));
    const answered = lines.filter((line) => line !== '');
    assert.ok(answered.length >= 500);
    assert.deepEqual(
      answered.filter((v) => !kept.has(v)),
      [],
      'every answered write is on disk',
    );
    // Batches are whole: each round's writes are one batch (the clock never moves), all or none.
    const byRound = new Map<string, number>();
    for (const v of kept) byRound.set(v.slice(0, 6), (byRound.get(v.slice(0, 6)) ?? 0) + 1);
    assert.deepEqual(
      [...byRound].filter(([, n]) => n !== 20),
      [],
    );
  });
});
