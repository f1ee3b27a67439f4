import assert from 'node:assert/strict';
import { closeSync, existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { NotFoundError } from '../core/index.js';
import { busyboxResolver } from '../testing/busybox-image.js';
import { openDirFd, tryLock } from './flock.js';
import { collectGarbage } from './pod-gc.js';
import { waitLockWithTimeout } from './pod-host-support.js';
import { PodRuntime } from './pod-runtime.js';

/**
 * A file where a pod dir should be. berth's `wait --timeout` once handed flock(1) the pod dir's
 * path, and flock(1) creates a file at a path where nothing is: a pod that moved on meanwhile
 * left an empty file at its old name, and every later `list` then failed on ENOTDIR (CI saw it).
 */
const root = mkdtempSync(join(tmpdir(), 'berth-stray-'));
after(() => rmSync(root, { recursive: true, force: true }));

describe('a file with a pod’s name', () => {
  it('is never made by a bounded wait whose pod dir moves away', async () => {
    const dir = join(root, 'moving');
    mkdirSync(join(dir, 'run', 'pod'), { recursive: true });
    mkdirSync(join(dir, 'exited-garbage'));
    const holder = openDirFd(join(dir, 'run', 'pod'));
    const waiter = openDirFd(join(dir, 'run', 'pod'));
    try {
      assert.ok(tryLock(holder, 'exclusive'));
      // The pod moves on between the waiter's open and its wait, as stage 1 and gc move pods.
      renameSync(join(dir, 'run', 'pod'), join(dir, 'exited-garbage', 'pod'));
      assert.equal(await waitLockWithTimeout(waiter, 200), false, 'still locked: timed out');
      closeSync(holder);
      assert.equal(await waitLockWithTimeout(waiter, 5000), true, 'granted once the holder let go');
      assert.equal(existsSync(join(dir, 'run', 'pod')), false, 'nothing made at the old name');
    } finally {
      closeSync(waiter);
    }
  });

  it('left by an older berth: list skips it, wait says not found, gc removes it', async () => {
    const dataDir = join(root, 'data');
    const runtime = new PodRuntime(dataDir, busyboxResolver());
    runtime.store.ensureDirs();
    const uuid = '9c38437d-ca77-454a-9ee8-97bd7066a3dd';
    const stray = join(dataDir, 'pods', 'exited-garbage', uuid);
    writeFileSync(stray, '');
    assert.deepEqual(runtime.store.list(), []);
    await assert.rejects(runtime.waitExit(uuid, 1000), NotFoundError);
    await assert.rejects(runtime.waitExit(uuid), NotFoundError);
    const report = collectGarbage(runtime, { gracePeriodMs: 0, expirePreparedMs: 0 });
    assert.deepEqual(report.strays, [`exited-garbage/${uuid}`]);
    assert.equal(existsSync(stray), false);
    assert.deepEqual(collectGarbage(runtime, { gracePeriodMs: 0, expirePreparedMs: 0 }).strays, []);
  });
});
