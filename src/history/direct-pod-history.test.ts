import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { podFiles } from '../runtime/pod-dirs.js';
import { PodRuntime } from '../runtime/pod-runtime.js';
import { writeExitedPods } from '../testing/exited-pods.js';
import { noteExitedPods, podDropbox } from './direct-pod-history.js';

describe('ends of direct pods found by polling', () => {
  const dir = mkdtempSync(join(tmpdir(), 'berth-poll-history-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('are dropped in batches, each end once, and a second poll finds nothing left to note', async () => {
    const uuids = writeExitedPods(dir, 1_200);
    const runtime = new PodRuntime(dir, { resolve: () => Promise.reject(new Error('no images here')) });
    const dropbox = podDropbox(dir);
    await noteExitedPods(runtime, dropbox);

    // 1,200 ends in three drops (500 + 500 + 200), not 1,200 fsync'd files.
    const drops = readdirSync(dropbox.dir).filter((name) => name.endsWith('.json'));
    assert.equal(drops.length, 3);
    const records = dropbox.pending();
    const dies = records.filter((r) => r.type === 'event' && r.event === 'die');
    assert.deepEqual(dies.map((r) => (r.type === 'event' ? r.container_id : '')).sort(), [...uuids].sort());
    for (const uuid of uuids)
      assert.ok(existsSync(join(dir, 'pods', 'run', uuid, podFiles.historyNoted)), `${uuid} is marked noted`);

    await noteExitedPods(runtime, dropbox);
    assert.equal(readdirSync(dropbox.dir).filter((name) => name.endsWith('.json')).length, 3);
  });
});
