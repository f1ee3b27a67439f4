import { describeBbsStoreContract } from '../testing/bbs-store-contract.js';
import { type PostgresServer, postgresSkipReason, startPostgres } from '../testing/postgres-harness.js';
import { openBbsStore } from './index.js';

describeBbsStoreContract('SQLite', async (clock) => {
  const store = await openBbsStore(':memory:', { now: clock.now });
  return { store, close: () => store.close() };
});

const skip = postgresSkipReason();
describeBbsStoreContract(
  'PostgreSQL',
  async (clock) => {
    const server: PostgresServer = await startPostgres();
    const store = await openBbsStore(server.url, { now: clock.now });
    return {
      store,
      close: async () => {
        await store.close();
        await server.stop();
      },
    };
  },
  skip,
);
