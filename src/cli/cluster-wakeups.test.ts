import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { BbsClient } from '../bbs/index.js';
import { busyboxLrp, TestCluster, waitFor } from '../testing/cluster-harness.js';

/**
 * Issue 20's event-driven hot path, end to end: a `berth server` and a `berth cell` with every
 * periodic pass set to an hour (auction batch, convergence, task kick, the rep's poll and with it
 * the executor's), real runc containers. Work can only move if each step wakes the next: a new
 * desire or task wakes the auctioneer, which calls the rep; a container that starts or exits is
 * reported by its holder's exit watch. (Stops still wait for the rep's poll.) No
 * assertion is on time: the deadlines only end a test that would otherwise wait for the hour.
 */
const cluster = new TestCluster('berth-wakeups-');
let bbs: BbsClient;
const hour = '1h';

before(async () => {
  const serverUrl = await cluster.startServer('server', hour, [
    '--auction-interval',
    hour,
    '--task-kick-interval',
    hour,
  ]);
  bbs = new BbsClient(serverUrl);
  await bbs.upsertDomain({ domain: 'tests', ttl_ms: 0 });
  await cluster.startCell('c1', 'z1', 62600, serverUrl, ['--poll-interval', hour]);
  await waitFor('the cell', async () => ((await bbs.listCells()).length === 1 ? true : undefined));
});

after(() => cluster.cleanup());

describe('with every interval an hour', { timeout: 180_000 }, () => {
  it('a desired LRP reaches RUNNING', async () => {
    // Exits at once on SIGTERM, so the stop below does not wait out a graceful-stop timeout.
    await bbs.desireLRP(busyboxLrp('idle-web'));
    const actual = await waitFor(
      'RUNNING without any periodic pass',
      async () => {
        const group = await bbs.getActualLRP({ process_guid: 'idle-web', index: 0 });
        return group.instance?.state === 'RUNNING' ? group.instance : undefined;
      },
      60_000,
    );
    assert.equal(actual.cell_id, 'c1');
    assert.equal(cluster.runcContainers('c1').length, 1, 'one runc container on the cell');
  });

  it('a task completes', async () => {
    await bbs.desireTask({
      task_guid: 'idle-task',
      domain: 'tests',
      image: 'bb:1',
      command: ['/bin/sh', '-c', 'echo done > /result'],
      env: {},
      memory_mb: 16,
      disk_mb: 16,
      result_file: '/result',
      completion_callback_url: '',
      placement_tags: [],
    });
    const task = await waitFor(
      'COMPLETED without any periodic pass',
      async () => {
        const t = await bbs.getTask({ task_guid: 'idle-task' });
        return t.state === 'COMPLETED' ? t : undefined;
      },
      60_000,
    );
    assert.equal(task.failed, false, task.failure_reason);
    assert.equal(task.result.trim(), 'done');
    assert.equal(task.cell_id, 'c1');
  });
});
