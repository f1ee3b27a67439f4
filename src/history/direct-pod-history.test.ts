import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { podFiles } from '../runtime/pod-dirs.js';
import { PodRuntime } from '../runtime/pod-runtime.js';
import { writeExitedPods } from '../testing/exited-pods.js';
import { noteExitedPods, noteUserStop, podDropbox } from './direct-pod-history.js';
import type { FinalizationRecord, ItemRecord } from './ingest-records.js';
import { finalOutcome } from './status-mapping.js';
import { localUser } from './stop-request.js';

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

describe('a direct pod stopped by `berth stop`', () => {
  const dir = mkdtempSync(join(tmpdir(), 'berth-stop-history-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("is the local user's action, and its end is Killed by that stop, not Failed", async () => {
    // Exit statuses 0, 1, 2 for the three pods; the one with status 1 (a non-zero end) was stopped.
    const [, stopped] = writeExitedPods(dir, 3);
    const runtime = new PodRuntime(dir, { resolve: () => Promise.reject(new Error('no images here')) });
    const dropbox = podDropbox(dir);
    noteUserStop(dropbox, join(dir, 'pods', 'run', stopped!), stopped!);
    await noteExitedPods(runtime, dropbox);
    const records = dropbox.pending();
    const user = records.find((r): r is ItemRecord => r.type === 'item' && r.container_id === stopped);
    assert.equal(user?.entity_type, 'user');
    assert.equal(user?.entity_id, localUser());
    assert.equal(user?.status, 'stop');
    const fin = records.find(
      (r): r is FinalizationRecord => r.type === 'finalization' && r.container_id === stopped,
    );
    assert.ok(fin);
    assert.equal(fin.stopped, `stopped by ${localUser()}`);
    assert.deepEqual(finalOutcome(fin), {
      status: 'Killed',
      message: `stopped by ${localUser()} (exit status 1)`,
    });
    // The others ended on their own: no stop in their finalization.
    const others = records.filter((r) => r.type === 'finalization' && r.container_id !== stopped);
    assert.equal(others.length, 2);
    assert.ok(others.every((r) => r.type === 'finalization' && r.stopped === undefined));
  });
});
