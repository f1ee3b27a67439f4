import { sql } from 'kysely';
import { openBbsStore, type SqlBbsStore } from '../bbs/index.js';
import {
  describeModelTxnRunnerContract,
  type ModelRunnerTarget,
} from '../testing/model-txn-runner-contract.js';
import { type PostgresServer, postgresSkipReason, startPostgres } from '../testing/postgres-harness.js';
import { MemoryModelTxnRunner } from './memory-model-txn-runner.js';
import { modelWrite, SqlModelTxnRunner } from './sql-model-txn-runner.js';

const modelTables = [
  'model_scopes',
  'model_cleanups',
  'model_units',
  'model_relations',
  'model_services',
  'model_cells',
] as const;

async function sqlTarget(stores: SqlBbsStore[], stop?: () => Promise<void>): Promise<ModelRunnerTarget> {
  const store = stores[0]!;
  const runner = await SqlModelTxnRunner.open(store.backend);
  return {
    runner,
    dump: () => runner.dump(),
    reset: () =>
      modelWrite(store.backend, async (db) => {
        for (const table of modelTables) await db.deleteFrom(table).execute();
        // Another writer's change as far as any cache is concerned.
        await db.updateTable('model_meta').set({ version: sql`version + 1` }).execute();
      }),
    ...(stores[1] ? { second: () => SqlModelTxnRunner.open(stores[1]!.backend) } : {}),
    close: async () => {
      for (const s of stores) await s.close();
      await stop?.();
    },
  };
}

describeModelTxnRunnerContract('memory (reference)', async () => {
  let runner = new MemoryModelTxnRunner();
  return {
    get runner() {
      return runner;
    },
    dump: async () => runner.model.toData(),
    reset: async () => {
      runner = new MemoryModelTxnRunner();
    },
    close: async () => {},
  };
});

describeModelTxnRunnerContract('SQLite', async () => sqlTarget([await openBbsStore(':memory:')]));

// Two SQLite connections in one process cannot race: better-sqlite3 waits for a busy database
// synchronously, blocking the event loop the other connection needs to commit. Processes racing on
// one SQLite file are covered by the system API tests (two CLI processes against one server).

const skip = postgresSkipReason();
describeModelTxnRunnerContract(
  'PostgreSQL',
  async () => {
    const server: PostgresServer = await startPostgres();
    return sqlTarget([await openBbsStore(server.url), await openBbsStore(server.url)], () => server.stop());
  },
  { ...(skip ? { skip } : {}), runs: 15 },
);
