import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { runBerth } from '../testing/berth-cli.js';
import { podCommandNames } from './pod-main.js';

const binBerth = fileURLToPath(new URL('../../bin/berth', import.meta.url));
const binBerthMjs = fileURLToPath(new URL('../../bin/berth.mjs', import.meta.url));
const bundle = fileURLToPath(new URL('./pod-main.bundle.cjs', import.meta.url));

/** Node's own trace of CommonJS loads: whether bin/berth took the bundle. */
async function loadsBundle(args: string[]): Promise<{ bundled: boolean; code: number | null }> {
  const result = await runBerth(args, { NODE_DEBUG: 'module' });
  return { bundled: result.stderr.includes('pod-main.bundle.cjs'), code: result.code };
}

describe('bin/berth', () => {
  it('sends exactly the pod commands to the bundle', () => {
    const source = readFileSync(binBerthMjs, 'utf8');
    const listed = /const podCommands = new Set\(\[([^\]]*)\]\)/.exec(source)?.[1];
    assert.ok(listed, 'bin/berth.mjs names its pod commands');
    const names = [...listed.matchAll(/'([^']+)'/g)].map((m) => m[1]);
    assert.deepEqual(names.sort(), [...podCommandNames].sort());
  });

  it('starts exactly the pod commands without NODE_EXTRA_CA_CERTS (they make no TLS connection)', async () => {
    const listed = /^\s*(prepare \|[^)]*)\)/m.exec(readFileSync(binBerth, 'utf8'))?.[1];
    assert.ok(listed, 'bin/berth names its pod commands');
    assert.deepEqual(
      listed
        .split('|')
        .map((n) => n.trim())
        .sort(),
      [...podCommandNames].sort(),
    );
    // A stand-in `node` first on PATH reports what bin/berth started it with.
    const fakeBin = mkdtempSync(join(tmpdir(), 'berth-fake-node-'));
    writeFileSync(
      join(fakeBin, 'node'),
      '#!/bin/sh\nca=unset\n[ -n "$NODE_EXTRA_CA_CERTS" ] && ca=$NODE_EXTRA_CA_CERTS\necho "script=$(basename "$1") ca=$ca"\n',
      { mode: 0o755 },
    );
    try {
      const probe = async (args: string[]) =>
        (
          await runBerth(args, {
            PATH: `${fakeBin}:${process.env.PATH ?? ''}`,
            NODE_EXTRA_CA_CERTS: '/ca.pem',
          })
        ).stdout.trim();
      assert.equal(await probe(['run', '--rm', 'bb']), 'script=berth.mjs ca=unset');
      assert.equal(await probe(['gc']), 'script=berth.mjs ca=unset');
      assert.equal(await probe(['image', 'pull', 'x']), 'script=berth.mjs ca=/ca.pem');
      assert.equal(await probe(['server']), 'script=berth.mjs ca=/ca.pem');
    } finally {
      rmSync(fakeBin, { recursive: true, force: true });
    }
  });

  it('runs pod commands from the bundle, others from the ES modules, and a stale bundle not at all', async () => {
    const current = await loadsBundle(['list', '--dir', '/nonexistent-berth-dir', '--format', 'json']);
    assert.equal(current.code, 0);
    assert.ok(current.bundled, 'list came from the bundle');
    const other = await loadsBundle(['version']);
    assert.equal(other.code, 0);
    assert.ok(!other.bundled, 'version did not load the bundle');

    // A build that stopped after tsc: the bundle is older than pod-main.js, so it is not used.
    const { atime, mtime } = statSync(bundle);
    const old = new Date(statSync(fileURLToPath(new URL('./pod-main.js', import.meta.url))).mtimeMs - 60_000);
    utimesSync(bundle, old, old);
    try {
      const stale = await loadsBundle(['list', '--dir', '/nonexistent-berth-dir', '--format', 'json']);
      assert.equal(stale.code, 0);
      assert.ok(!stale.bundled, 'a stale bundle was used');
    } finally {
      utimesSync(bundle, atime, mtime);
    }
  });
});
