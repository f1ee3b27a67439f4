import { openBbsStore } from '../bbs/index.js';
import { describeHistoryStoreContract } from '../testing/history-store-contract.js';
import { type PostgresServer, postgresSkipReason, startPostgres } from '../testing/postgres-harness.js';
import { HistoryStore } from './index.js';

// The suite's store keeps 6 characters of logs, so the cap is visible in a small case.
const maxLogChars = 6;

describeHistoryStoreContract('SQLite', async (clock) => {
  const bbs = await openBbsStore(':memory:', { now: clock.now });
  return {
    bbs,
    history: await HistoryStore.open(bbs.database, { now: clock.now, maxLogChars }),
    close: () => bbs.close(),
  };
});

describeHistoryStoreContract(
  'PostgreSQL',
  async (clock) => {
    const server: PostgresServer = await startPostgres('history');
    const bbs = await openBbsStore(server.url, { now: clock.now });
    return {
      bbs,
      history: await HistoryStore.open(bbs.database, { now: clock.now, maxLogChars }),
      close: async () => {
        await bbs.close();
        await server.stop();
      },
    };
  },
  postgresSkipReason(),
);
