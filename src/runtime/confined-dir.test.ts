import assert from 'node:assert/strict';
import {
  closeSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { openConfinedDirFd } from './confined-dir.js';
import { openDirFd, tryLock } from './flock.js';

/** The native addon against the real kernel: open_tree(2) and mount_setattr(2). */
const root = mkdtempSync(join(tmpdir(), 'berth-confined-'));
after(() => rmSync(root, { recursive: true, force: true }));

function podDir(name: string): string {
  const dir = join(root, name);
  mkdirSync(join(dir, 'sub'), { recursive: true });
  writeFileSync(join(dir, 'pod.json'), '{}\n');
  return dir;
}

describe('openConfinedDirFd', () => {
  it('".." through the fd stays in the directory; nothing above it can be reached', () => {
    const dir = podDir('climb');
    writeFileSync(join(root, 'above'), 'secret\n');
    const fd = openConfinedDirFd(dir);
    try {
      const via = `/proc/self/fd/${fd}`;
      assert.deepEqual(readdirSync(`${via}/..`).sort(), ['pod.json', 'sub']);
      assert.deepEqual(readdirSync(`${via}/sub/../../../..`).sort(), ['pod.json', 'sub']);
      assert.throws(() => readFileSync(`${via}/../above`), { code: 'ENOENT' });
      assert.equal(readFileSync(`${via}/pod.json`, 'utf8'), '{}\n', 'the directory itself is readable');
    } finally {
      closeSync(fd);
    }
  });

  it('nothing can be written through the fd, while the directory stays writable on its own path', () => {
    const dir = podDir('readonly');
    const fd = openConfinedDirFd(dir);
    try {
      assert.throws(() => writeFileSync(`/proc/self/fd/${fd}/planted`, 'x'), { code: 'EROFS' });
      assert.throws(() => rmSync(`/proc/self/fd/${fd}/pod.json`), { code: 'EROFS' });
      writeFileSync(join(dir, 'exit.json'), '{}\n');
      assert.ok(readdirSync(`/proc/self/fd/${fd}`).includes('exit.json'), 'the same directory, live');
    } finally {
      closeSync(fd);
    }
  });

  it("its flock is the directory's lock: it conflicts with a lock taken on the plain path, both ways", () => {
    const dir = podDir('lock');
    const confined = openConfinedDirFd(dir);
    const plain = openDirFd(dir);
    try {
      assert.ok(tryLock(confined, 'exclusive'));
      assert.equal(tryLock(plain, 'shared'), false);
      closeSync(confined);
      assert.ok(tryLock(plain, 'exclusive'));
      const again = openConfinedDirFd(dir);
      assert.equal(tryLock(again, 'shared'), false);
      closeSync(again);
    } finally {
      closeSync(plain);
    }
  });

  it('follows the directory through a rename (a pod moving from prepare/ to run/)', () => {
    const dir = podDir('moving');
    const fd = openConfinedDirFd(dir);
    try {
      renameSync(dir, join(root, 'moved'));
      assert.ok(readdirSync(`/proc/self/fd/${fd}`).includes('pod.json'));
    } finally {
      closeSync(fd);
    }
  });

  it('a missing path or a file: an error with the errno name as its code, naming the path', () => {
    assert.throws(
      () => openConfinedDirFd(join(root, 'missing')),
      (err: Error & { code?: string }) => {
        assert.equal(err.code, 'ENOENT');
        assert.match(err.message, /missing/);
        return true;
      },
    );
    writeFileSync(join(root, 'file'), '');
    assert.throws(() => openConfinedDirFd(join(root, 'file')), { code: 'ENOTDIR' });
    assert.throws(() => openConfinedDirFd(''), TypeError);
  });
});
