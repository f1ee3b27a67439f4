import { Worker } from 'node:worker_threads';
import type Database from 'better-sqlite3';

/** SQLite's own threshold (pages of WAL after which a commit checkpoints), restored if the thread dies. */
const sqliteDefaultAutocheckpoint = 1000;
/**
 * The threshold while the thread checkpoints: a backstop only, for a thread that falls far behind
 * (40 MB of WAL at 4 KiB pages).
 */
const backstopAutocheckpoint = 10_000;

export interface SqliteCheckpointer {
  /** Stops the thread; the connection's own checkpoints take over again. */
  stop(): Promise<void>;
}

/**
 * Moves a busy SQLite database's WAL checkpoints off the thread that writes it. SQLite checkpoints
 * inside the commit that takes the WAL past 1,000 pages: that commit copies the pages into the
 * database file and fsyncs it, on the caller's thread, which for berth's server is the event loop.
 * Under a burst of writes that was about 15 % of the server's time in `COMMIT` (a CPU profile of
 * 100,000 instances placed; docs/performance.md, round 17), with every request waiting behind it.
 * A micro-benchmark of 20,000 ten-row transactions: 6.0 s in commits with SQLite's checkpoints,
 * 2.1 s without, the slowest commit 17 ms against 0.5 ms.
 *
 * Here a worker thread with a connection of its own runs a PASSIVE checkpoint every `intervalMs`,
 * and the writer's own threshold is raised to a backstop. WAL mode lets a checkpointer run beside
 * the writer and its readers; the WAL restarts from its beginning at the first write after a
 * checkpoint that copied everything.
 */
export function startSqliteCheckpointer(
  database: Database.Database,
  path: string,
  intervalMs = 200,
): SqliteCheckpointer {
  const worker = new Worker(new URL('./sqlite-checkpoint-worker.js', import.meta.url), {
    workerData: { path, intervalMs },
  });
  // The thread never keeps the process alive: a server that forgets to stop it still exits.
  worker.unref();
  database.pragma(`wal_autocheckpoint = ${backstopAutocheckpoint}`);
  let stopped = false;
  const exited = new Promise<void>((resolve) => {
    worker.once('exit', () => {
      if (!stopped && database.open) database.pragma(`wal_autocheckpoint = ${sqliteDefaultAutocheckpoint}`);
      resolve();
    });
  });
  // An error ends the thread ('exit' follows); the writer's own checkpoints are back by then.
  worker.on('error', () => {});
  return {
    async stop() {
      if (stopped) return exited;
      stopped = true;
      // Held while it winds down, so that a process with nothing else to do waits for it.
      worker.ref();
      worker.postMessage('stop');
      await exited;
      if (database.open) database.pragma(`wal_autocheckpoint = ${sqliteDefaultAutocheckpoint}`);
    },
  };
}
