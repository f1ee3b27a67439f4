import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { BbsClient } from '../bbs/index.js';
import { busyboxLrp, TestCluster, waitFor } from '../testing/cluster-harness.js';
import { type PostgresServer, postgresSkipReason, startPostgres } from '../testing/postgres-harness.js';

/**
 * Issue 20's wake-ups across servers: two `berth server` processes on one PostgreSQL, every
 * periodic pass an hour, a real cell. A desire written through the server that holds no
 * singleton can only be placed if its commit wakes the auctioneer on the other one — the NOTIFY
 * that every commit with events sends, which each server's event log LISTENs for. No assertion
 * is on time: the deadline only ends a test that would otherwise wait for the hour.
 */
describe('two servers on one PostgreSQL, every interval an hour', {
  skip: postgresSkipReason() ?? false,
  timeout: 240_000,
}, () => {
  const cluster = new TestCluster('berth-wakeups-pg-');
  const hour = '1h';
  let pg: PostgresServer;
  let leader = '';
  let follower = '';

  before(async () => {
    pg = await startPostgres('wakeups');
    const shared = [
      '--db',
      pg.url,
      '--auction-interval',
      hour,
      '--task-kick-interval',
      hour,
      '--event-poll',
      hour,
    ];
    const first = await cluster.startServer('s1', hour, shared);
    // The first server takes every lease; the second waits as the standby.
    await waitFor('the first server holding the auctioneer', async () =>
      (await singletonsOf(first)).includes('auctioneer') ? true : undefined,
    );
    const second = await cluster.startServer('s2', hour, shared);
    [leader, follower] = [first, second];
    await new BbsClient(leader).upsertDomain({ domain: 'tests', ttl_ms: 0 });
    await cluster.startCell('w1', 'z1', 62700, leader, ['--poll-interval', hour]);
    await waitFor('the cell', async () =>
      (await new BbsClient(leader).listCells()).length === 1 ? true : undefined,
    );
  });
  after(async () => {
    await cluster.cleanup();
    await pg?.stop();
  });

  it('an LRP desired through the standby server reaches RUNNING, placed by the other', async () => {
    assert.deepEqual(await singletonsOf(follower), [], 'the standby runs no singleton');
    const viaFollower = new BbsClient(follower);
    await viaFollower.desireLRP(busyboxLrp('woken'));
    const actual = await waitFor(
      'RUNNING without any periodic pass',
      async () => {
        const group = await viaFollower.getActualLRP({ process_guid: 'woken', index: 0 });
        return group.instance?.state === 'RUNNING' ? group.instance : undefined;
      },
      90_000,
    );
    assert.equal(actual.cell_id, 'w1');
  });
});

async function singletonsOf(serverUrl: string): Promise<string[]> {
  const health = (await (await fetch(`${serverUrl}/healthz`)).json()) as { singletons?: string[] };
  return health.singletons ?? [];
}
