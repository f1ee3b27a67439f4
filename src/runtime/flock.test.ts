import assert from 'node:assert/strict';
import { closeSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { isLocked, openDirFd, tryLock, unlock, waitLock } from './flock.js';
import { nativeAddon } from './native-addon.js';

/** flock(2) through berth's native addon, against the real kernel. */
const dir = mkdtempSync(join(tmpdir(), 'berth-flock-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('flock', () => {
  it('shared locks share, an exclusive one excludes, and unlock lets the next one in', () => {
    const [a, b] = [openDirFd(dir), openDirFd(dir)];
    try {
      assert.ok(tryLock(a, 'shared'));
      assert.ok(tryLock(b, 'shared'));
      assert.equal(isLocked(dir), false, 'shared holders do not count as locked');
      unlock(b);
      assert.ok(tryLock(a, 'exclusive'), 'a converts its own lock');
      assert.equal(tryLock(b, 'shared'), false);
      assert.equal(isLocked(dir), true);
      unlock(a);
      assert.ok(tryLock(b, 'exclusive'));
    } finally {
      closeSync(a);
      closeSync(b);
    }
  });

  it('waitLock sleeps until the holder lets go, without blocking the event loop', async () => {
    const [holder, waiter] = [openDirFd(dir), openDirFd(dir)];
    try {
      assert.ok(tryLock(holder, 'exclusive'));
      let granted = false;
      const waiting = waitLock(waiter, 'shared').then(() => {
        granted = true;
      });
      let ticks = 0;
      for (let i = 0; i < 5; i++) {
        await sleep(20);
        ticks++;
      }
      assert.equal(ticks, 5, 'the event loop ran meanwhile');
      assert.equal(granted, false, 'still waiting while the lock is held');
      closeSync(holder); // closing the fd drops its lock, as a process exit does
      await waiting;
      assert.equal(granted, true);
    } finally {
      closeSync(waiter);
    }
  });

  it('isLocked: a path with no directory at it (moved away, or a file) is undefined, not an error', () => {
    assert.equal(isLocked(join(dir, 'moved-away')), undefined);
    const file = join(dir, 'a-file');
    writeFileSync(file, '');
    assert.equal(isLocked(file), undefined);
    mkdirSync(join(dir, 'a-dir'));
    assert.equal(isLocked(join(dir, 'a-dir')), false);
  });

  it('a bad fd or operation is a clear error', async () => {
    assert.throws(() => nativeAddon().flock(987654, 1), { code: 'EBADF' });
    assert.throws(() => nativeAddon().flock(0, 64), TypeError);
    await assert.rejects(waitLock(987654, 'exclusive'), { code: 'EBADF' });
  });
});
