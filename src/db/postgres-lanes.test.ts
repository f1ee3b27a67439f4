import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { type PostgresServer, postgresSkipReason, startPostgres } from '../testing/postgres-harness.js';
import { cellsLaneWidth, openPostgresBackend, type SqlBackend } from './index.js';

describe('PostgreSQL lanes: the cells never hold every connection', {
  skip: postgresSkipReason() ?? false,
}, () => {
  let pg: PostgresServer;
  before(async () => {
    pg = await startPostgres('berth_lanes');
  });
  after(async () => {
    await pg?.stop();
  });

  it('keeps a fifth of the pool (at least one connection) out of the cells lane', () => {
    assert.deepEqual(
      [1, 2, 5, 10, 30].map((size) => cellsLaneWidth(size)),
      [1, 2, 4, 8, 24],
    );
  });

  it('a write in the default lane commits while the cells lane is full and queued', {
    timeout: 30_000,
  }, async () => {
    const poolSize = 5;
    const backend: SqlBackend = openPostgresBackend({ url: pg.url, poolSize });
    const width = cellsLaneWidth(poolSize);
    try {
      let release!: () => void;
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      let inside = 0;
      let entered!: () => void;
      const allInside = new Promise<void>((resolve) => {
        entered = resolve;
      });
      // Every cells-lane slot holds an open transaction (a real connection) until released, and
      // as many again wait behind them.
      const cellWrites = Array.from({ length: width * 2 }, () =>
        backend.write(
          async (tx) => {
            await sql`SELECT 1`.execute(tx);
            if (++inside === width) entered();
            await held;
          },
          { lane: 'cells' },
        ),
      );
      await allInside;
      assert.equal(inside, width, 'the queued cells writes have not begun');
      const open = await sql<{ n: string }>`
        SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND state = 'idle in transaction'`.execute(
        backend.db,
      );
      assert.equal(Number(open.rows[0]?.n), width, 'one open transaction per cells-lane slot');
      // The user's write finds a free connection although the cells' queue is not empty.
      const answer = await backend.write(
        async (tx) => (await sql<{ v: number }>`SELECT 7 AS v`.execute(tx)).rows[0]?.v,
      );
      assert.equal(answer, 7);
      assert.equal(inside, width, 'still only the first cells writes are inside');
      release();
      await Promise.all(cellWrites);
      assert.equal(inside, width * 2, 'the queued cells writes ran once slots freed');
    } finally {
      await backend.close();
    }
  });
});
