import assert from 'node:assert/strict';
import {
  existsSync,
  lstatSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, describe, it } from 'node:test';
import { type FixtureEntry, tarBytes } from '../../testing/oci-fixture-builder.js';
import { LayerApplier, LayerEntryRefusedError } from './layer-extractor.js';

const scratch = mkdtempSync(join(tmpdir(), 'berth-extract-'));
after(() => rmSync(scratch, { recursive: true, force: true }));
let counter = 0;

/** A fresh root with the given layers applied in order. */
async function applyAll(...layers: FixtureEntry[][]): Promise<string> {
  counter += 1;
  const root = join(scratch, `root${counter}`);
  const { mkdirSync } = await import('node:fs');
  mkdirSync(root);
  const applier = new LayerApplier(root);
  for (const [i, entries] of layers.entries()) {
    await applier.apply(Readable.from([await tarBytes(entries)]), `layer ${i + 1}`);
  }
  return root;
}

function ls(dir: string): string[] {
  return readdirSync(dir).sort();
}

/** A path on the host that an escape would create; asserted absent after each malicious case. */
const hostCanary = `berth-escape-${process.pid}-${Date.now()}`;

describe('LayerApplier: files, metadata, links', () => {
  it('keeps modes incl. setuid, owners, mtimes, symlink targets verbatim, hardlinks', async () => {
    const mtime = new Date('2020-01-02T03:04:05Z');
    const root = await applyAll([
      { name: './', type: 'directory', mode: 0o755 },
      { name: 'bin/', type: 'directory', mode: 0o755, mtime },
      { name: 'bin/su', body: 'su', mode: 0o4755, uid: 0, gid: 0, mtime },
      { name: 'home/u/file', body: 'mine', mode: 0o600, uid: 1000, gid: 1001, mtime },
      { name: 'etc/localtime', type: 'symlink', linkname: '/usr/share/zoneinfo/UTC' },
      { name: 'bin/su2', type: 'link', linkname: 'bin/su' },
      { name: 'dev/null', type: 'character-device', devmajor: 1, devminor: 3 },
      { name: 'dev/sda', type: 'block-device', devmajor: 8, devminor: 0 },
      { name: 'run/fifo', type: 'fifo' },
    ]);
    const su = statSync(join(root, 'bin/su'));
    assert.equal(su.mode & 0o7777, 0o4755);
    assert.equal(su.mtime.getTime(), mtime.getTime());
    const file = statSync(join(root, 'home/u/file'));
    assert.equal(file.mode & 0o7777, 0o600);
    if (process.getuid?.() === 0) assert.deepEqual([file.uid, file.gid], [1000, 1001]);
    assert.equal(readlinkSync(join(root, 'etc/localtime')), '/usr/share/zoneinfo/UTC');
    assert.equal(statSync(join(root, 'bin/su2')).ino, su.ino);
    assert.equal(statSync(join(root, 'bin')).mtime.getTime(), mtime.getTime());
    assert.deepEqual(ls(join(root, 'dev')), [], 'device nodes are skipped');
    assert.deepEqual(ls(join(root, 'run')), [], 'fifos are skipped');
  });

  it('handles long names (pax / gnu headers written by tar-stream)', async () => {
    const long = `${'d'.repeat(120)}/${'f'.repeat(150)}`;
    const root = await applyAll([{ name: long, body: 'x' }]);
    assert.equal(readFileSync(join(root, long), 'utf8'), 'x');
  });

  it('replaces a file with a directory and a symlink with a file, never writing through it', async () => {
    const root = await applyAll(
      [
        { name: 'a', body: 'file' },
        { name: 'b', type: 'symlink', linkname: '/etc/hostname' },
      ],
      [
        { name: 'a/', type: 'directory' },
        { name: 'b', body: 'now a file' },
      ],
    );
    assert.ok(statSync(join(root, 'a')).isDirectory());
    assert.ok(lstatSync(join(root, 'b')).isFile());
    assert.equal(readFileSync(join(root, 'b'), 'utf8'), 'now a file');
  });
});

describe('LayerApplier: whiteouts', () => {
  it('.wh.NAME deletes a lower file or tree; the whiteout itself is not written', async () => {
    const root = await applyAll(
      [
        { name: 'etc/keep', body: 'k' },
        { name: 'etc/gone', body: 'g' },
        { name: 'var/cache/x/y', body: 'y' },
      ],
      [
        { name: 'etc/.wh.gone', body: '' },
        { name: 'var/.wh.cache', body: '' },
        { name: 'nothing/.wh.here', body: '' },
      ],
    );
    assert.deepEqual(ls(join(root, 'etc')), ['keep']);
    assert.deepEqual(ls(join(root, 'var')), []);
    assert.ok(!existsSync(join(root, 'nothing')), 'a whiteout in a missing dir creates nothing');
  });

  it('an opaque dir hides lower content but keeps what its own layer adds, in any order', async () => {
    const root = await applyAll(
      [
        { name: 'opt/old1', body: '1' },
        { name: 'opt/sub/old2', body: '2' },
        { name: 'srv/old', body: 'o' },
      ],
      [
        // the marker after this layer's own entries: they must survive it
        { name: 'opt/new', body: 'n' },
        { name: 'opt/sub/new2', body: 'n2' },
        { name: 'opt/.wh..wh..opq', body: '' },
        { name: 'srv/.wh..wh..opq', body: '' },
        { name: 'srv/fresh', body: 'f' },
      ],
    );
    assert.deepEqual(ls(join(root, 'opt')), ['new', 'sub']);
    assert.deepEqual(ls(join(root, 'opt/sub')), ['new2']);
    assert.deepEqual(ls(join(root, 'srv')), ['fresh']);
  });

  it('a later layer can re-add what an earlier whiteout removed', async () => {
    const root = await applyAll(
      [{ name: 'x', body: 'v1' }],
      [{ name: '.wh.x', body: '' }],
      [{ name: 'x', body: 'v3' }],
    );
    assert.equal(readFileSync(join(root, 'x'), 'utf8'), 'v3');
  });

  it('accepts overlayfs-style char 0/0 whiteouts', async () => {
    const root = await applyAll(
      [{ name: 'etc/motd', body: 'hi' }],
      [{ name: 'etc/motd', type: 'character-device', devmajor: 0, devminor: 0 }],
    );
    assert.deepEqual(ls(join(root, 'etc')), []);
  });

  it('a whiteout reached through a symlink deletes inside the root only', async () => {
    const root = await applyAll(
      [
        { name: 'tmp/victim', body: 'v' },
        { name: 'link', type: 'symlink', linkname: '/tmp' },
      ],
      [{ name: 'link/.wh.victim', body: '' }],
    );
    assert.ok(!existsSync(join(root, 'tmp/victim')));
  });
});

describe('LayerApplier: refuses what would escape the root', () => {
  async function refused(
    entries: FixtureEntry[],
    entryName: string,
    lower: FixtureEntry[] = [],
  ): Promise<void> {
    const layers = lower.length > 0 ? [lower, entries] : [entries];
    await assert.rejects(applyAll(...layers), (err: unknown) => {
      assert.ok(err instanceof LayerEntryRefusedError, String(err));
      assert.equal(err.code, 'invalid_argument');
      assert.match(err.message, new RegExp(`entry "${entryName.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}"`));
      return true;
    });
    assert.ok(!existsSync(join(tmpdir(), hostCanary)), 'nothing was written on the host');
  }

  it('an entry climbing out with ".."', () =>
    refused([{ name: `../../../../tmp/${hostCanary}` }], `../../../../tmp/${hostCanary}`));
  it('an entry climbing out midway', () =>
    refused([{ name: `a/../../${hostCanary}` }], `a/../../${hostCanary}`));
  it('a hardlink to outside the image', () =>
    refused([{ name: 'passwd', type: 'link', linkname: '../../../../etc/passwd' }], 'passwd'));
  it('a hardlink to a file the image does not have', () =>
    refused([{ name: 'shadow', type: 'link', linkname: '/etc/shadow' }], 'shadow'));
  it('a hardlink whose target path goes through a symlink to a host file', () =>
    refused([{ name: 'x', type: 'link', linkname: 'etc/x' }], 'x', [
      { name: 'etc', type: 'symlink', linkname: '/etc' },
    ]));
  it('an entry written through a symlink to a file', () =>
    refused([{ name: 'pw/x', body: 'x' }], 'pw/x', [
      { name: 'etc/passwd', body: 'root:x:0:0::/:/bin/sh\n' },
      { name: 'pw', type: 'symlink', linkname: '/etc/passwd' },
    ]));
  it('a whiteout naming ".."', () =>
    refused([{ name: 'a/.wh..', body: '' }], 'a/.wh..', [{ name: 'a/f', body: '' }]));
});

describe('LayerApplier: writes through symlinks land inside the root', () => {
  it('evil -> / then evil/etc/x and evil/tmp/canary', async () => {
    const root = await applyAll([
      { name: 'evil', type: 'symlink', linkname: '/' },
      { name: 'evil/etc/x', body: 'inside' },
      { name: `evil/tmp/${hostCanary}`, body: 'inside' },
    ]);
    assert.equal(readFileSync(join(root, 'etc/x'), 'utf8'), 'inside');
    assert.ok(existsSync(join(root, 'tmp', hostCanary)));
    assert.ok(!existsSync(join(tmpdir(), hostCanary)));
    assert.equal(readlinkSync(join(root, 'evil')), '/', 'the symlink itself is kept verbatim');
  });

  it('a chain a -> ../../.. across layers', async () => {
    const root = await applyAll(
      [
        { name: 'd/a', type: 'symlink', linkname: '../../..' },
        { name: 'd/b', type: 'symlink', linkname: 'a/tmp' },
      ],
      [{ name: `d/b/${hostCanary}`, body: 'inside' }],
    );
    assert.ok(existsSync(join(root, 'tmp', hostCanary)));
    assert.ok(!existsSync(join(tmpdir(), hostCanary)));
  });

  it('a hardlink through a symlink links the in-root file', async () => {
    const root = await applyAll([
      { name: 'real/f', body: 'data' },
      { name: 'alias', type: 'symlink', linkname: '/real' },
      { name: 'hl', type: 'link', linkname: 'alias/f' },
    ]);
    assert.equal(statSync(join(root, 'hl')).ino, statSync(join(root, 'real/f')).ino);
  });
});
