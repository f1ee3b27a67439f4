import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import {
  archivePathComponents,
  InRootResolver,
  NotADirectoryInRootError,
  SymlinkLoopInRootError,
} from './in-root-path.js';

describe('archivePathComponents', () => {
  const cases: ReadonlyArray<[string, string[] | null]> = [
    ['./usr//bin/', ['usr', 'bin']],
    ['/etc/passwd', ['etc', 'passwd']],
    ['a/../b', ['b']],
    ['./', []],
    ['..', null],
    ['../etc/passwd', null],
    ['a/../../etc', null],
    ['a/./b/../../..', null],
  ];
  for (const [name, expected] of cases) {
    it(`reads "${name}" as ${JSON.stringify(expected)}`, () =>
      assert.deepEqual(archivePathComponents(name), expected));
  }
});

describe('InRootResolver', () => {
  const root = mkdtempSync(join(tmpdir(), 'berth-inroot-'));
  after(() => rmSync(root, { recursive: true, force: true }));
  mkdirSync(join(root, 'etc'));
  mkdirSync(join(root, 'usr/lib'), { recursive: true });
  symlinkSync('/', join(root, 'evil'));
  symlinkSync('../../..', join(root, 'usr/up'));
  symlinkSync('usr/lib', join(root, 'lib'));
  symlinkSync('/etc/passwd', join(root, 'pw'));
  writeFileSync(join(root, 'etc/passwd'), 'root:x:0:0::/:/bin/sh\n');
  symlinkSync('loop2', join(root, 'loop1'));
  symlinkSync('loop1', join(root, 'loop2'));

  it('clamps an absolute symlink target to the root', async () => {
    const r = new InRootResolver(root);
    assert.deepEqual(await r.resolveDir(['evil', 'etc'], false), ['etc']);
    assert.deepEqual(await r.resolveDir(['evil', 'evil', 'evil'], false), []);
  });

  it('stops ".." in a symlink chain at the root', async () => {
    const r = new InRootResolver(root);
    assert.deepEqual(await r.resolveDir(['usr', 'up', 'etc'], false), ['etc']);
    assert.deepEqual(await r.resolveDir(['usr', 'up', 'usr', 'up', 'usr', 'up'], false), []);
  });

  it('follows relative symlinks within the root', async () => {
    assert.deepEqual(await new InRootResolver(root).resolveDir(['lib'], false), ['usr', 'lib']);
  });

  it('creates missing directories only when asked, inside the root', async () => {
    const r = new InRootResolver(root);
    assert.equal(await r.resolveDir(['evil', 'new', 'deeper'], false), undefined);
    const created: string[] = [];
    assert.deepEqual(
      await r.resolveDir(['evil', 'new', 'deeper'], true, (rel) => created.push(rel.join('/'))),
      ['new', 'deeper'],
    );
    assert.deepEqual(created, ['new', 'new/deeper']);
  });

  it('refuses a path through a file, even through a symlink to one', async () => {
    const r = new InRootResolver(root);
    await assert.rejects(r.resolveDir(['pw', 'x'], true), NotADirectoryInRootError);
    await assert.rejects(r.resolveDir(['etc', 'passwd'], true), NotADirectoryInRootError);
  });

  it('refuses a symlink loop', async () => {
    await assert.rejects(new InRootResolver(root).resolveDir(['loop1', 'x'], true), SymlinkLoopInRootError);
  });
});
