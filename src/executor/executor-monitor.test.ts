import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import type { Monitor } from '../bbs/index.js';
import { PodRuntime } from '../runtime/index.js';
import { busyboxResolver } from '../testing/busybox-image.js';
import { removePodDataDir } from '../testing/pod-data-dir-cleanup.js';
import type { ContainerState, ExecutorContainer } from './container-state.js';
import { Executor } from './executor.js';

/**
 * The monitor's settings reach the monitor of a real runc container (issue 20): a command check
 * (`runc exec`) against a file the app makes and removes. The rules themselves are
 * monitor-policy.test.ts's; here only that each setting is the one the container runs under.
 */
const images = busyboxResolver();
const dataDir = mkdtempSync(join(tmpdir(), 'berth-exec-monitor-'));
const executor = new Executor({
  runtime: new PodRuntime(dataDir, images),
  capacity: { memory_mb: 4096, disk_mb: 4096, containers: 20 },
  hostAddress: '127.0.0.1',
  pollIntervalMs: 100,
  monitorIntervalMs: 100,
  portRange: { from: 63200, to: 63299 },
});
executor.start();

after(() => {
  executor.stop();
  removePodDataDir(dataDir, images);
});

const ready: Monitor = { command: ['/bin/sh', '-c', 'test -f /tmp/ready'] };
let instances = 0;

/** Starts `script` as an LRP instance under `monitor`; resolves at the first of `states` it reaches. */
async function start(
  script: string,
  monitor: Monitor,
  startTimeoutS: number,
): Promise<{ guid: string; reached: (states: ContainerState[]) => Promise<ExecutorContainer> }> {
  const guid = `mon-${instances++}`;
  const seen: ExecutorContainer[] = [];
  const waiters: (() => void)[] = [];
  executor.on('container', (c) => {
    if (c.guid !== guid) return;
    seen.push(c);
    for (const w of waiters.splice(0)) w();
  });
  executor.reserve(
    guid,
    { kind: 'lrp', process_guid: guid, index: 0, instance_guid: guid, domain: 'tests' },
    { memory_mb: 64, disk_mb: 0 },
  );
  await executor.run(guid, {
    image: 'bb',
    command: ['/bin/sh', '-c', `mkdir -p /tmp; ${script}`],
    env: {},
    ports: [],
    monitor,
    start_timeout_s: startTimeoutS,
  });
  const reached = async (states: ContainerState[]) => {
    // The executor's timers do not hold the event loop open (a cell has its server for that).
    const keepAlive = setInterval(() => undefined, 1000);
    try {
      for (;;) {
        const hit = seen.find((c) => states.includes(c.state));
        if (hit) return hit;
        await new Promise<void>((resolve) => waiters.push(resolve));
      }
    } finally {
      clearInterval(keepAlive);
    }
  };
  return { guid, reached };
}

describe('monitor settings on real runc containers', { timeout: 120_000 }, () => {
  it('failure_threshold 1: the first failed check of a RUNNING instance kills it', async () => {
    // The check passes once (it leaves a mark) and fails ever after: no timing in the app.
    const c = await start(
      'exec sleep 1000',
      {
        command: ['/bin/sh', '-c', 'test ! -f /tmp/checked && touch /tmp/checked'],
        period_ms: 200,
        failure_threshold: 1,
      },
      60,
    );
    assert.equal((await c.reached(['RUNNING', 'COMPLETED'])).state, 'RUNNING');
    const done = await c.reached(['COMPLETED']);
    assert.deepEqual(
      done.result && { failed: done.result.failed, reason: done.result.reason, kind: done.result.kind },
      { failed: true, reason: 'the monitor failed', kind: 'crashed' },
    );
    await executor.deleteContainer(c.guid);
  });

  it('startup_grace_ms keeps a slow starter alive past its start timeout; without it, it is killed', async () => {
    // Ready after 3 s, past its 1 s start timeout: the grace keeps it. The control is slower
    // still (30 s), so a loaded machine's late rounds cannot let it pass before it is killed.
    const graced = await start(
      'sleep 3; touch /tmp/ready; exec sleep 1000',
      { ...ready, startup_grace_ms: 60_000 },
      1,
    );
    const bare = await start('sleep 30; touch /tmp/ready; exec sleep 1000', ready, 1);
    const killed = await bare.reached(['RUNNING', 'COMPLETED']);
    assert.equal(killed.state, 'COMPLETED');
    assert.equal(killed.result?.reason, 'the monitor did not pass within 1s');
    assert.equal((await graced.reached(['RUNNING', 'COMPLETED'])).state, 'RUNNING');
    await executor.deleteContainer(graced.guid);
    await executor.deleteContainer(bare.guid);
  });
});
