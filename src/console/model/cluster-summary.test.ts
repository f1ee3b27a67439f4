import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { actualRecord, cellRecord, desiredRecord, taskRecord } from '../../testing/console-records.js';
import { cellUse, clusterCounts, instanceRows, latestFailures, systemOfDomain } from './cluster-summary.js';
import { ClusterView } from './cluster-view.js';

function view(): ClusterView {
  const v = new ClusterView();
  v.load({
    desired: [desiredRecord('web', { memory_mb: 100, disk_mb: 10, domain: 'system-shop' })],
    actual: [
      actualRecord('web', 0, { cell_id: 'c1', domain: 'system-shop' }),
      actualRecord('web', 1, { cell_id: 'c1', state: 'CLAIMED', domain: 'system-shop' }),
      actualRecord('web', 2, {
        cell_id: 'c2',
        state: 'CRASHED',
        crash_count: 2,
        crash_reason: 'exit status 3',
        last_crashed_at: '2026-11-25T10:05:00.000Z',
      }),
      actualRecord('web', 3, {
        cell_id: '',
        state: 'UNCLAIMED',
        placement_error: 'insufficient resources: memory',
        since: '2026-11-25T10:06:00.000Z',
      }),
    ],
    tasks: [
      taskRecord('t-run', { state: 'RUNNING', cell_id: 'c2', memory_mb: 30, disk_mb: 5 }),
      taskRecord('t-bad', {
        state: 'COMPLETED',
        failed: true,
        failure_reason: 'exit status 1',
        updated_at: '2026-11-25T10:04:00.000Z',
      }),
    ],
    cells: [cellRecord('c1'), cellRecord('c2', { zone: 'z2' })],
  });
  return v;
}

describe('the console summaries', () => {
  it('a cell reserves what its claimed and running instances and running tasks declare', () => {
    const [c1, c2] = cellUse(view());
    assert.deepEqual(c1?.used, { memory_mb: 200, disk_mb: 20, containers: 2 });
    assert.equal(c1?.instances, 2);
    // The crashed instance reserves nothing; the running task does.
    assert.deepEqual(c2?.used, { memory_mb: 30, disk_mb: 5, containers: 1 });
    assert.equal(c2?.instances, 0);
    assert.equal(c2?.zone, 'z2');
  });

  it('counts instances and tasks by state and adds capacity over cells', () => {
    const counts = clusterCounts(view());
    assert.deepEqual(counts.instances, { UNCLAIMED: 1, CLAIMED: 1, RUNNING: 1, CRASHED: 1 });
    assert.equal(counts.tasks.RUNNING, 1);
    assert.equal(counts.tasks.COMPLETED, 1);
    assert.equal(counts.capacity.memory_mb, 2048);
    assert.equal(counts.used.memory_mb, 230);
    assert.equal(counts.cells, 2);
  });

  it('lists failures newest first with their reasons', () => {
    const failures = latestFailures(view(), 10);
    assert.deepEqual(
      failures.map((f) => [f.kind, f.subject, f.reason]),
      [
        ['placement', 'web/3', 'insufficient resources: memory'],
        ['crash', 'web/2', 'exit status 3'],
        ['task', 't-bad', 'exit status 1'],
      ],
    );
    assert.equal(latestFailures(view(), 1).length, 1);
  });

  it('rows name the system of a system domain', () => {
    const rows = instanceRows(view());
    assert.equal(rows.find((r) => r.index === 0)?.system, 'shop');
    assert.equal(rows.find((r) => r.index === 2)?.system, '');
    assert.equal(systemOfDomain('system-a-b'), 'a-b');
  });
});
