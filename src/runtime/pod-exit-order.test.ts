import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { busyboxResolver } from '../testing/busybox-image.js';
import { pidsWithCmdline } from '../testing/processes-by-cmdline.js';
import { isLocked } from './flock.js';
import { collectGarbage } from './pod-gc.js';
import { PodRuntime } from './pod-runtime.js';

/**
 * What a caller may rely on once it hears a pod end: that nothing holds the pod's lock any more
 * (so `rm` and gc act at once), and that gc with a grace period of 0 deletes what it has just
 * marked, whatever the file system's clock says.
 */
const images = busyboxResolver();
const dirs: string[] = [];

function newRuntime(): PodRuntime {
  const dir = mkdtempSync(join(tmpdir(), 'berth-exit-order-'));
  dirs.push(dir);
  return new PodRuntime(dir, images);
}

after(() => {
  for (const dir of dirs) {
    collectGarbage(new PodRuntime(dir, images), { gracePeriodMs: 0, expirePreparedMs: 0 });
    rmSync(dir, { recursive: true, force: true });
  }
});

describe('a pod heard to end', () => {
  it('is unlocked the moment its stage-1 holder is reaped: the watcher, which holds the lock too, went first', async (t) => {
    const runtime = newRuntime();
    // The holder's watch does not keep this process running (it is unref'd for long-lived callers).
    const keepAlive = setInterval(() => {}, 1000);
    t.after(() => clearInterval(keepAlive));
    const prepared = await runtime.prepare('bb', { args: ['sh', '-c', 'read line'], net: 'none' });
    assert.ok(runtime.store.move(prepared.location, 'run'));
    const location = { uuid: prepared.location.uuid, phase: 'run' as const };
    const path = runtime.store.path(location);
    let watcher: number | undefined;
    let lockedAtExit: boolean | undefined;
    const ended = new Promise<void>((resolve) => {
      void runtime.startDetached(location, prepared.lockFd, {
        // The watcher is held stopped until a while after the apps have ended: a holder that
        // does not wait for it ends first, with the pod still locked.
        onAppsExited: () => setTimeout(() => process.kill(watcher ?? 0, 'SIGCONT'), 300),
        onExit: () => {
          // Sampled in the same turn the holder's end is heard, as the executor's removal does.
          lockedAtExit = isLocked(path);
          resolve();
        },
      });
    });
    for (let i = 0; i < 200 && watcher === undefined; i++) {
      // Another test's watcher may end meanwhile: each listing skips what ended.
      const ofPod = new Set(pidsWithCmdline(location.uuid));
      watcher = pidsWithCmdline('berth-watcher').find((pid) => ofPod.has(pid));
      if (watcher === undefined) await new Promise((r) => setTimeout(r, 10));
    }
    assert.ok(watcher !== undefined, "the pod's watcher runs");
    process.kill(watcher, 'SIGSTOP');
    // The app reads its stdin, which is /dev/null: it ends once asked to run.
    await ended;
    assert.equal(lockedAtExit, false, 'the pod was unlocked when its holder was reaped');
    assert.equal(runtime.status(location.uuid).state, 'exited');
  });

  it('gc with a grace period of 0 deletes a pod marked this millisecond, though its ctime reads ahead of the clock', async () => {
    const runtime = newRuntime();
    const prepared = await runtime.prepare('bb', { args: ['true'], net: 'none' });
    assert.ok(runtime.store.move(prepared.location, 'run'));
    const uuid = prepared.location.uuid;
    await runtime.startDetached({ uuid, phase: 'run' }, prepared.lockFd);
    await runtime.waitExit(uuid);
    const marked = collectGarbage(runtime, { gracePeriodMs: 0, expirePreparedMs: 0, markOnly: true });
    assert.deepEqual(marked.marked, [uuid]);
    const path = runtime.store.path({ uuid, phase: 'exited-garbage' });
    // The kernel's ctime is finer than Date's milliseconds: a clock that reads 1 ms behind the
    // mark is what a sweep in the same millisecond sees about half the time.
    const behind = new Date(Math.floor(statSync(path).ctimeMs) - 1);
    const swept = collectGarbage(runtime, { gracePeriodMs: 0, expirePreparedMs: 0, now: behind });
    assert.deepEqual(swept.deleted, [uuid]);
    assert.ok(!existsSync(path));
    // A grace period still counts from the mark: a later mark is never swept early.
    const other = await runtime.prepare('bb', { args: ['true'], net: 'none' });
    assert.ok(runtime.store.move(other.location, 'run'));
    await runtime.startDetached({ uuid: other.location.uuid, phase: 'run' }, other.lockFd);
    await runtime.waitExit(other.location.uuid);
    collectGarbage(runtime, { gracePeriodMs: 0, expirePreparedMs: 0, markOnly: true });
    const otherPath = runtime.store.path({ uuid: other.location.uuid, phase: 'exited-garbage' });
    const early = new Date(Math.floor(statSync(otherPath).ctimeMs) - 1);
    assert.deepEqual(
      collectGarbage(runtime, { gracePeriodMs: 1, expirePreparedMs: 0, now: early }).deleted,
      [],
    );
  });
});
