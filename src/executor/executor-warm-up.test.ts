import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { cniPluginDir, PodRuntime } from '../runtime/index.js';
import { claimedSlices, sliceOwner } from '../runtime/pod-isolation.js';
import { busyboxResolver } from '../testing/busybox-image.js';
import { Executor } from './executor.js';

/**
 * The executor's start warms up what a cell's first container would otherwise pay for: its pod
 * worker thread, the host's pod network rules and the data dir's slice of the pod subnet (real
 * iptables, on the machine's own bridge settings).
 */
const dataDir = mkdtempSync(join(tmpdir(), 'berth-exec-warm-'));
after(() => rmSync(dataDir, { recursive: true, force: true }));

describe('Executor: warm-up at start', () => {
  it('claims the data dir its slice of the pod subnet before any container starts', async (t) => {
    if (!existsSync(join(cniPluginDir, 'bridge'))) {
      t.skip(`no CNI plugins in ${cniPluginDir}`);
      return;
    }
    const runtime = new PodRuntime(dataDir, busyboxResolver());
    runtime.store.ensureDirs();
    const executor = new Executor({
      runtime,
      capacity: { memory_mb: 64, disk_mb: 64, containers: 1 },
      hostAddress: '127.0.0.1',
    });
    const owner = sliceOwner(dataDir);
    const owned = () => [...claimedSlices().values()].includes(owner);
    assert.equal(owned(), false, 'a new data dir has no slice yet');
    executor.start();
    try {
      await executor.warmedUp();
      assert.equal(owned(), true, 'the warm-up claimed the slice');
      assert.equal(executor.list().length, 0);
    } finally {
      executor.stop();
    }
  });
});
