import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { PodRuntime } from '../runtime/index.js';
import { busyboxResolver } from '../testing/busybox-image.js';
import type { ExecutorContainer } from './container-state.js';
import { Executor } from './executor.js';

/**
 * A command that exits at once can end before its start has returned: the holder's `started` and
 * `exited` arrive together, and the pod worker hands the exit on before the start's answer (CI saw
 * a task's history with no start). The container still goes RUNNING, then COMPLETED, on real runc.
 * The runtime below holds the start's answer until the apps' exit has been told.
 */
const dataDir = mkdtempSync(join(tmpdir(), 'berth-exec-early-'));
after(() => rmSync(dataDir, { recursive: true, force: true }));

function exitBeforeStartReturns(): PodRuntime {
  const runtime = new PodRuntime(dataDir, busyboxResolver());
  runtime.store.ensureDirs();
  const start = runtime.startDetached.bind(runtime);
  runtime.startDetached = async (location, lockFd, options = {}) => {
    let told: () => void = () => {};
    // The holder's pipe is unref'd (a cell has its server to keep it up): this keeps the test's
    // process up until the exit is told, 30 s at most.
    const exited = new Promise<void>((resolve, reject) => {
      const deadline = setTimeout(() => reject(new Error('the apps exit was never told')), 30_000);
      told = () => {
        clearTimeout(deadline);
        resolve();
      };
    });
    await start(location, lockFd, {
      ...options,
      onAppsExited: () => {
        options.onAppsExited?.();
        told();
      },
    });
    await exited;
  };
  return runtime;
}

describe('Executor: a container whose apps end before its start returns', () => {
  it('is RUNNING, then COMPLETED with its exit code, and both are told', async () => {
    const executor = new Executor({
      runtime: exitBeforeStartReturns(),
      capacity: { memory_mb: 256, disk_mb: 256, containers: 10 },
      hostAddress: '127.0.0.1',
    });
    const told: string[] = [];
    executor.on('container', (c: ExecutorContainer) => {
      if (c.guid === 'quick') told.push(c.state);
    });
    executor.reserve(
      'quick',
      { kind: 'task', task_guid: 'quick', domain: 'tests' },
      {
        memory_mb: 16,
        disk_mb: 0,
      },
    );
    try {
      await executor.run('quick', {
        image: 'busybox',
        command: ['/bin/sh', '-c', 'exit 3'],
        env: {},
        ports: [],
      });
      for (let i = 0; i < 200 && executor.get('quick')?.state !== 'COMPLETED'; i++)
        await new Promise((r) => setTimeout(r, 50));
      assert.equal(executor.get('quick')?.state, 'COMPLETED');
      assert.equal(executor.get('quick')?.exit_code, 3);
      assert.deepEqual(told, ['RUNNING', 'COMPLETED']);
    } finally {
      await executor.deleteContainer('quick');
    }
  });
});
