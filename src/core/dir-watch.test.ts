import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { DirWatch } from './dir-watch.js';
import { Wakeup } from './service-loop.js';

/** Long enough that only a wake-up ends the wait while the test runs. */
const hour = 3_600_000;

/** Writes `name` into `dir` from another process, whole, with rename(2), as a drop is written. */
function dropFromAnotherProcess(dir: string, name: string): void {
  const script = `const fs = require('node:fs'); fs.writeFileSync(process.argv[1] + '.tmp', '[]'); fs.renameSync(process.argv[1] + '.tmp', process.argv[1]);`;
  const result = spawnSync(process.execPath, ['-e', script, join(dir, name)]);
  assert.equal(result.status, 0, result.stderr.toString());
}

describe('DirWatch', () => {
  let root: string;
  let signal: AbortController;
  let watch: DirWatch | undefined;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'berth-dir-watch-'));
    signal = new AbortController();
  });
  afterEach(() => {
    watch?.close();
    signal.abort();
    rmSync(root, { recursive: true, force: true });
  });

  /** Watches `dirs` (made by ensure); closed after the test. */
  function watchDirs(dirs: readonly string[]): { dirWatch: DirWatch; wakeup: Wakeup } {
    const wakeup = new Wakeup();
    const dirWatch = new DirWatch(dirs, wakeup);
    watch = dirWatch;
    dirWatch.ensure();
    return { dirWatch, wakeup };
  }

  /** Lets the events of what just happened ring, then drains the wake they left. */
  async function quiet(wakeup: Wakeup): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, 50));
    await wakeup.wait(0, signal.signal);
  }

  it('makes the dirs that are missing, private, and watches them', () => {
    const dirs = [join(root, 'a'), join(root, 'b', 'c')];
    watch = new DirWatch(dirs, new Wakeup());
    assert.equal(watch.watching, false, 'nothing is watched before ensure');
    watch.ensure();
    for (const dir of dirs) assert.equal(statSync(dir).mode & 0o777, 0o700, dir);
    assert.equal(watch.watching, true);
  });

  it('wakes when another process renames a file into a dir, and when one is removed', async () => {
    const dirs = [join(root, 'drops'), join(root, 'obituaries')];
    const { wakeup } = watchDirs(dirs);
    dropFromAnotherProcess(join(root, 'obituaries'), 'pod-1.json');
    assert.equal(await wakeup.wait(hour, signal.signal), 'woken');
    // The rest of that drop's events (the temp file's) ring too: let them, before the removal.
    await quiet(wakeup);
    rmSync(join(root, 'obituaries', 'pod-1.json'));
    assert.equal(await wakeup.wait(hour, signal.signal), 'woken');
  });

  it('rings when a watched dir is removed, and watches the one made anew at the next ensure', async () => {
    const dir = join(root, 'drops');
    const { dirWatch, wakeup } = watchDirs([dir]);
    rmSync(dir, { recursive: true });
    assert.equal(await wakeup.wait(hour, signal.signal), 'woken');
    // Made anew by someone else: the old watch ended with the removal, whatever inode this gets.
    mkdirSync(dir);
    dirWatch.ensure();
    assert.equal(dirWatch.watching, true);
    await quiet(wakeup);
    dropFromAnotherProcess(dir, 'drop-2.json');
    assert.equal(await wakeup.wait(hour, signal.signal), 'woken');
  });

  it('a dir moved away and another put in its place: the move rings, and the next ensure watches the new one', async () => {
    const dir = join(root, 'drops');
    const { dirWatch, wakeup } = watchDirs([dir]);
    renameSync(dir, join(root, 'aside'));
    mkdirSync(dir);
    assert.equal(await wakeup.wait(hour, signal.signal), 'woken');
    assert.equal(dirWatch.watching, false, 'the moved dir is not the one to watch');
    dirWatch.ensure();
    assert.equal(dirWatch.watching, true);
    await quiet(wakeup);
    writeFileSync(join(dir, 'x.json'), '[]');
    assert.equal(await wakeup.wait(hour, signal.signal), 'woken');
  });

  it('rings no more once closed, and ensure after close makes nothing', async () => {
    const dir = join(root, 'drops');
    const { dirWatch, wakeup } = watchDirs([dir]);
    dirWatch.close();
    writeFileSync(join(dir, 'late.json'), '[]');
    assert.equal(await wakeup.wait(200, signal.signal), 'timeout');
    rmSync(dir, { recursive: true });
    dirWatch.ensure();
    assert.equal(existsSync(dir), false);
  });
});
