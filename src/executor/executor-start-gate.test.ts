import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { PodRuntime } from '../runtime/index.js';
import { busyboxResolver } from '../testing/busybox-image.js';
import { Executor } from './executor.js';

/**
 * `maxConcurrentStarts`: containers beyond it wait their turn in INITIALIZING, on real runc. The
 * runtime's startDetached (the holder's spawn up to the app running) is counted while in flight.
 */
const dataDir = mkdtempSync(join(tmpdir(), 'berth-exec-gate-'));
after(() => rmSync(dataDir, { recursive: true, force: true }));

function countedRuntime(): {
  runtime: PodRuntime;
  inFlight: () => number;
  most: () => number;
  calls: () => number;
} {
  const runtime = new PodRuntime(dataDir, busyboxResolver());
  runtime.store.ensureDirs();
  let now = 0;
  let most = 0;
  let calls = 0;
  const start = runtime.startDetached.bind(runtime);
  runtime.startDetached = async (...args) => {
    calls++;
    most = Math.max(most, ++now);
    try {
      return await start(...args);
    } finally {
      now--;
    }
  };
  return { runtime, inFlight: () => now, most: () => most, calls: () => calls };
}

/** Room for ten containers, but one start at a time. */
function oneStartAtATime(runtime: PodRuntime): Executor {
  return new Executor({
    runtime,
    capacity: { memory_mb: 256, disk_mb: 256, containers: 10 },
    hostAddress: '127.0.0.1',
    maxConcurrentStarts: 1,
  });
}

const resource = { memory_mb: 16, disk_mb: 0 };
const spec = { image: 'busybox', command: ['/bin/sleep', '30'], env: {}, ports: [] };

async function until(what: string, ok: () => boolean): Promise<void> {
  for (let i = 0; i < 600 && !ok(); i++) await new Promise((r) => setTimeout(r, 50));
  assert.ok(ok(), what);
}

describe('Executor: containers start through a gate', () => {
  it('starts at most maxConcurrentStarts at once, the rest in their turn, and all run', async () => {
    const counted = countedRuntime();
    const executor = oneStartAtATime(counted.runtime);
    const guids = ['g1', 'g2', 'g3'];
    try {
      for (const guid of guids)
        executor.reserve(guid, { kind: 'task', task_guid: guid, domain: 'tests' }, resource);
      const runs = guids.map((guid) => executor.run(guid, spec));
      await Promise.all(runs);
      assert.equal(counted.most(), 1, 'never two starts at once');
      assert.equal(counted.calls(), 3);
      for (const guid of guids) assert.equal(executor.get(guid)?.state, 'RUNNING');
    } finally {
      for (const guid of guids) await executor.deleteContainer(guid);
    }
  });

  it('a container deleted while it waits its turn is never prepared', async () => {
    const counted = countedRuntime();
    const executor = oneStartAtATime(counted.runtime);
    try {
      executor.reserve('first', { kind: 'task', task_guid: 'first', domain: 'tests' }, resource);
      executor.reserve('waiting', { kind: 'task', task_guid: 'waiting', domain: 'tests' }, resource);
      const first = executor.run('first', spec);
      const waiting = executor.run('waiting', spec);
      await until('the first start is under way', () => counted.inFlight() === 1);
      assert.equal(executor.get('waiting')?.state, 'INITIALIZING');
      await executor.deleteContainer('waiting');
      await Promise.all([first, waiting]);
      assert.equal(counted.calls(), 1, 'only the first pod was started');
      assert.equal(executor.get('waiting'), undefined);
      assert.equal(counted.runtime.store.list().length, 1, "no pod was made for it: the first one's is all");
    } finally {
      await executor.deleteContainer('first');
    }
  });
});
