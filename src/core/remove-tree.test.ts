import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { removeTree } from './remove-tree.js';

const root = mkdtempSync(join(tmpdir(), 'berth-remove-tree-'));
after(() => rmSync(root, { recursive: true, force: true }));

describe('removeTree', () => {
  it('deletes nested dirs, files and symlinks, and never follows a symlink out', () => {
    const outside = join(root, 'outside');
    mkdirSync(outside);
    writeFileSync(join(outside, 'keep'), 'kept\n');
    const tree = join(root, 'tree');
    mkdirSync(join(tree, 'a/b/c'), { recursive: true });
    writeFileSync(join(tree, 'a/b/c/file'), 'x');
    writeFileSync(join(tree, 'top'), 'y');
    symlinkSync(outside, join(tree, 'link-to-dir'));
    symlinkSync(join(outside, 'keep'), join(tree, 'a/link-to-file'));
    symlinkSync('/nonexistent', join(tree, 'dangling'));
    removeTree(tree);
    assert.equal(existsSync(tree), false);
    assert.deepEqual(readdirSync(outside), ['keep'], 'what the symlinks pointed at is untouched');
  });

  it('a missing path is no error; a plain file is removed', () => {
    removeTree(join(root, 'never-was'));
    const file = join(root, 'plain');
    writeFileSync(file, 'z');
    removeTree(file);
    assert.equal(existsSync(file), false);
  });
});
