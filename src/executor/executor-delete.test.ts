import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { PodRuntime } from '../runtime/index.js';
import { busyboxResolver } from '../testing/busybox-image.js';
import { Executor } from './executor.js';

/**
 * Seed 002: "Containers can be deleted regardless of current state". The states a container holds
 * without a pod (RESERVED, and COMPLETED after a stop before it started) are checked here; deleting
 * CREATED and RUNNING containers, which kills their pods, runs in the cluster tests on real runc.
 */
const dataDir = mkdtempSync(join(tmpdir(), 'berth-exec-delete-'));
after(() => rmSync(dataDir, { recursive: true, force: true }));

function newExecutor(): Executor {
  return new Executor({
    runtime: new PodRuntime(dataDir, busyboxResolver()),
    capacity: { memory_mb: 256, disk_mb: 256, containers: 1 },
    hostAddress: '127.0.0.1',
  });
}

const tags = { kind: 'task', task_guid: 't1', domain: 'tests' } as const;
const resource = { memory_mb: 256, disk_mb: 0 };

describe('Executor.deleteContainer', () => {
  it('deletes a RESERVED container and gives its resources back', async () => {
    const executor = newExecutor();
    executor.reserve('t1', tags, resource);
    assert.throws(() => executor.reserve('t2', { ...tags, task_guid: 't2' }, resource), /not enough/);
    await executor.deleteContainer('t1');
    assert.equal(executor.get('t1'), undefined);
    assert.deepEqual(executor.used(), { memory_mb: 0, disk_mb: 0, containers: 0 });
    assert.equal(executor.reserve('t2', { ...tags, task_guid: 't2' }, resource).state, 'RESERVED');
  });

  it('deletes a COMPLETED container (stopped before it started)', async () => {
    const executor = newExecutor();
    executor.reserve('t1', tags, resource);
    await executor.stopContainer('t1');
    assert.equal(executor.get('t1')?.state, 'COMPLETED');
    await executor.deleteContainer('t1');
    assert.equal(executor.get('t1'), undefined);
    assert.equal(executor.used().containers, 0);
  });

  it('deleting a container that is not there is a no-op', async () => {
    const executor = newExecutor();
    await executor.deleteContainer('missing');
    assert.equal(executor.list().length, 0);
  });
});
