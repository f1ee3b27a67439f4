import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { BbsClient } from '../bbs/index.js';
import { HistoryClient } from '../history/index.js';
import { desiredDefinition } from './bbs-fixtures.js';
import { bbsRecordCounts, startSimulatedCluster, waitUntil } from './simulated-cluster.js';

// The scale harness itself (`npm run bench cluster-scale`), small: a real server, simulated cells
// in separate processes. No timings are asserted; the deadlines only bound a broken run.
describe('simulated cells (the scale harness)', () => {
  it('places instances over cells in other processes, and replaces those of a cell killed with -9', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'berth-sim-'));
    const cluster = await startSimulatedCluster({
      dir,
      cells: 3,
      cellsPerProcess: 1,
      capacity: { memory_mb: 64 * 40, disk_mb: 100_000, containers: 40 },
      behaviour: { startDelayMs: 10 },
      pollIntervalMs: 1_000,
      presenceTtlMs: 2_000,
      history: true,
      serverArgs: ['--convergence-interval', '1s', '--auction-interval', '100ms', '--lease-ttl', '2s'],
    });
    try {
      const bbs = new BbsClient(cluster.server.url);
      await bbs.desireLRP(desiredDefinition('web', 30));
      const running = async () => (await bbsRecordCounts(cluster.server.url)).get('actual_lrp:RUNNING') ?? 0;
      await waitUntil('30 instances RUNNING', async () => (await running()) === 30, 60_000);
      const perCell = new Map<string, number>();
      for (const a of await bbs.listActualLRPs({ process_guid: 'web' }))
        perCell.set(a.cell_id, (perCell.get(a.cell_id) ?? 0) + 1);
      assert.deepEqual([...perCell.keys()].sort(), ['sim-0000', 'sim-0001', 'sim-0002']);

      const victim = cluster.hosts[0];
      assert.ok(victim);
      await victim.kill();
      await waitUntil(
        "the killed cell's instances RUNNING on the other cells",
        async () => {
          const actuals = await bbs.listActualLRPs({ process_guid: 'web' });
          return (
            actuals.length === 30 && actuals.every((a) => a.state === 'RUNNING' && a.cell_id !== 'sim-0000')
          );
        },
        60_000,
      );
      // Each container event went through the history journal to the server's ingest.
      // Each container's launch went through its cell's history journal to the server's ingest:
      // the 30 first instances and the replacements of the killed cell's.
      const history = new HistoryClient(cluster.server.url);
      await waitUntil(
        'the history of more than 30 containers',
        async () => (await history.listContainers({ limit: 100 })).containers.length > 30,
        30_000,
      );
    } finally {
      await cluster.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
