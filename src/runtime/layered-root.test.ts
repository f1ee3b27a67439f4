import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { readInLayeredRoot } from './layered-root.js';
import { overlayOptions } from './mounts.js';

/**
 * LayeredRoot on real directories laid out as overlayfs keeps them (whiteouts are real 0/0
 * character devices, opaque dirs carry the real trusted.overlay.opaque xattr: the tests run as
 * root, as berth does). The outside world is a directory beside the layers holding a secret.
 */
const base = mkdtempSync(join(tmpdir(), 'berth-layers-'));
after(() => rmSync(base, { recursive: true, force: true }));

let count = 0;
function layout(): { upper: string; lower: string; outside: string; read(path: string): string | undefined } {
  const dir = join(base, String(count++));
  const upper = join(dir, 'upper');
  const lower = join(dir, 'lower');
  const outside = join(dir, 'outside');
  for (const d of [upper, lower, outside]) mkdirSync(d, { recursive: true });
  writeFileSync(join(outside, 'secret'), 'host secret\n');
  return {
    upper,
    lower,
    outside,
    read: (path) => readInLayeredRoot([upper, lower], path, 10 * 1024)?.toString(),
  };
}

function whiteout(path: string): void {
  execFileSync('mknod', [path, 'c', '0', '0']);
}

describe('LayeredRoot', () => {
  it('reads a file from the upper layer over the lower, and from the lower when the upper has none', () => {
    const l = layout();
    mkdirSync(join(l.lower, 'etc'));
    writeFileSync(join(l.lower, 'etc/os'), 'image\n');
    writeFileSync(join(l.lower, 'etc/motd'), 'image motd\n');
    mkdirSync(join(l.upper, 'etc'));
    writeFileSync(join(l.upper, 'etc/os'), 'container\n');
    assert.equal(l.read('/etc/os'), 'container\n');
    assert.equal(l.read('etc/motd'), 'image motd\n', 'a directory in both layers is merged');
    assert.equal(l.read('/etc/none'), undefined);
    assert.equal(l.read('/etc'), undefined, 'a directory is no file');
  });

  it('follows symlinks inside the root: relative, absolute (from the root), across layers', () => {
    const l = layout();
    mkdirSync(join(l.lower, 'data'));
    writeFileSync(join(l.lower, 'data/result'), 'in the image\n');
    mkdirSync(join(l.upper, 'tmp'));
    writeFileSync(join(l.upper, 'tmp/out'), 'written\n');
    symlinkSync('/data', join(l.upper, 'abs'));
    symlinkSync('../tmp/out', join(l.upper, 'tmp/rel'));
    symlinkSync('tmp', join(l.lower, 'img-link'));
    assert.equal(l.read('/abs/result'), 'in the image\n');
    assert.equal(l.read('/tmp/rel'), 'written\n');
    assert.equal(l.read('/img-link/out'), 'written\n', 'a link of the image into the upper dir');
  });

  it('never leaves the root: absolute targets, .. and links to host paths all stay inside', () => {
    const l = layout();
    // What the container planted: `ln -s <host dir> /b`, `ln -s ../../.. /up`, and a file link.
    symlinkSync(l.outside, join(l.upper, 'b'));
    symlinkSync('../../../../../../..', join(l.upper, 'up'));
    symlinkSync(join(l.outside, 'secret'), join(l.upper, 'file-link'));
    assert.equal(l.read('/b/secret'), undefined);
    assert.equal(l.read(`/up${l.outside}/secret`), undefined);
    assert.equal(l.read(`/../../../../..${l.outside}/secret`), undefined);
    assert.equal(l.read('/file-link'), undefined);
    // The same names inside the root are found there, not on the host.
    mkdirSync(join(l.lower, ...l.outside.split('/').filter(Boolean)), { recursive: true });
    writeFileSync(join(l.lower, ...l.outside.split('/').filter(Boolean), 'secret'), 'the root’s own\n');
    assert.equal(l.read('/b/secret'), 'the root’s own\n');
    assert.equal(l.read('/file-link'), 'the root’s own\n');
  });

  it('what overlayfs writes: a whiteout hides the lower entry, an opaque dir the lower dir', () => {
    const l = layout();
    mkdirSync(join(l.lower, 'gone'));
    writeFileSync(join(l.lower, 'gone/f'), 'deleted in the container\n');
    writeFileSync(join(l.lower, 'removed'), 'deleted too\n');
    mkdirSync(join(l.lower, 'opq'));
    writeFileSync(join(l.lower, 'opq/old'), 'hidden\n');
    mkdirSync(join(l.lower, 'was-dir'));
    writeFileSync(join(l.lower, 'was-dir/f'), 'below a file\n');
    // The container's changes, made through a real overlay mount as runc's would be.
    const work = join(l.upper, '..', 'work');
    const merged = join(l.upper, '..', 'merged');
    mkdirSync(work);
    mkdirSync(merged);
    execFileSync('mount', ['-t', 'overlay', 'overlay', '-o', overlayOptions(l.lower, l.upper, work), merged]);
    try {
      rmSync(join(merged, 'gone'), { recursive: true });
      rmSync(join(merged, 'removed'));
      rmSync(join(merged, 'opq'), { recursive: true });
      mkdirSync(join(merged, 'opq'));
      writeFileSync(join(merged, 'opq/new'), 'shown\n');
      rmSync(join(merged, 'was-dir'), { recursive: true });
      writeFileSync(join(merged, 'was-dir'), 'now a file\n');
    } finally {
      execFileSync('umount', [merged]);
    }
    assert.equal(l.read('/gone/f'), undefined);
    assert.equal(l.read('/removed'), undefined);
    assert.equal(l.read('/opq/old'), undefined);
    assert.equal(l.read('/opq/new'), 'shown\n');
    assert.equal(l.read('/was-dir/f'), undefined);
    assert.equal(l.read('/was-dir'), 'now a file\n');
  });

  it('a whiteout made by hand (a 0/0 character device) hides a lower file', () => {
    const l = layout();
    writeFileSync(join(l.lower, 'f'), 'below\n');
    whiteout(join(l.upper, 'f'));
    assert.equal(l.read('/f'), undefined);
  });

  it('reads only regular files, at most the limit, and gives up on symlink loops', () => {
    const l = layout();
    execFileSync('mkfifo', [join(l.upper, 'fifo')]);
    assert.equal(l.read('/fifo'), undefined, 'a fifo is not opened (it would block)');
    writeFileSync(join(l.upper, 'big'), 'x'.repeat(20_000));
    assert.equal(l.read('/big')?.length, 10 * 1024);
    symlinkSync('loop2', join(l.upper, 'loop1'));
    symlinkSync('loop1', join(l.upper, 'loop2'));
    assert.equal(l.read('/loop1'), undefined);
    assert.equal(readInLayeredRoot([join(l.upper, 'missing-layer'), l.lower], '/x', 10), undefined);
  });
});
