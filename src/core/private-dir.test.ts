import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { ensurePrivateDir } from './private-dir.js';

const base = mkdtempSync(join(tmpdir(), 'berth-private-'));
after(() => rmSync(base, { recursive: true, force: true }));
const modeOf = (path: string) => statSync(path).mode & 0o7777;

describe('ensurePrivateDir', () => {
  it('creates the dir (and its missing parents) 0700', () => {
    const dir = join(base, 'new', 'data');
    assert.equal(ensurePrivateDir(dir), true);
    assert.equal(modeOf(dir), 0o700);
    assert.equal(modeOf(join(base, 'new')), 0o700);
  });

  it('makes a 0755 data dir of an older berth 0700', () => {
    const dir = join(base, 'old');
    mkdirSync(join(dir, 'pods'), { recursive: true });
    chmodSync(dir, 0o755);
    assert.equal(ensurePrivateDir(dir), true);
    assert.equal(modeOf(dir), 0o700);
  });

  it('leaves alone a directory that is not berth’s, and a sticky one such as /tmp', () => {
    const foreign = join(base, 'foreign');
    mkdirSync(foreign);
    chmodSync(foreign, 0o755);
    assert.equal(ensurePrivateDir(foreign), false);
    assert.equal(modeOf(foreign), 0o755);
    const sticky = join(base, 'sticky');
    mkdirSync(join(sticky, 'pods'), { recursive: true });
    chmodSync(sticky, 0o1777);
    assert.equal(ensurePrivateDir(sticky), false);
    assert.equal(modeOf(sticky), 0o1777);
    assert.equal(ensurePrivateDir(foreign, { owned: true }), true, 'unless the caller owns it');
    assert.equal(modeOf(foreign), 0o700);
  });
});
