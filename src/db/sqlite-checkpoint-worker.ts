// The thread that checkpoints a SQLite database's WAL for the process that writes it
// (sqlite-checkpointer.ts): its own connection, a PASSIVE checkpoint every interval, until told
// to stop. Nothing else runs here.
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';

interface CheckpointWorkerData {
  readonly path: string;
  readonly intervalMs: number;
}

const { path, intervalMs } = workerData as CheckpointWorkerData;
const database = new Database(path, { fileMustExist: true });
const timer = setInterval(() => {
  // PASSIVE copies what no reader still needs and waits for no one; a frame it leaves is copied
  // by a later one. A failure (the file gone, the disk full) ends the thread: its owner goes back
  // to SQLite's own checkpoints.
  database.pragma('wal_checkpoint(PASSIVE)');
}, intervalMs);

parentPort?.on('message', (message: unknown) => {
  if (message !== 'stop') return;
  clearInterval(timer);
  database.close();
  parentPort?.close();
});
