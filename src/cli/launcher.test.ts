import assert from 'node:assert/strict';
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { runBerth, runProgram } from '../testing/berth-cli.js';
import { podCommandNames } from './pod-main.js';

const binBerth = fileURLToPath(new URL('../../bin/berth', import.meta.url));
const distCli = fileURLToPath(new URL('.', import.meta.url));
const bundle = join(distCli, 'pod-main.bundle.cjs');
/** A pod command that needs no data dir: prints `[]`. */
const listArgs = ['list', '--dir', '/nonexistent-berth-dir', '--format', 'json'];

// A stand-in `node` first on PATH reports which entry bin/berth started it on, and with what.
const fakeBin = mkdtempSync(join(tmpdir(), 'berth-fake-node-'));
writeFileSync(
  join(fakeBin, 'node'),
  '#!/bin/sh\nca=unset\n[ -n "$NODE_EXTRA_CA_CERTS" ] && ca=$NODE_EXTRA_CA_CERTS\necho "entry=$(basename "$1") ca=$ca"\n',
  { mode: 0o755 },
);
after(() => rmSync(fakeBin, { recursive: true, force: true }));

async function startedWith(args: string[]): Promise<string> {
  const env = { PATH: `${fakeBin}:${process.env.PATH ?? ''}`, NODE_EXTRA_CA_CERTS: '/ca.pem' };
  return (await runBerth(args, env)).stdout.trim();
}

describe('bin/berth', () => {
  it('names exactly the pod commands', () => {
    const listed = /^\s*(prepare \|[^)]*)\)/m.exec(readFileSync(binBerth, 'utf8'))?.[1];
    assert.ok(listed, 'bin/berth names its pod commands');
    assert.deepEqual(
      listed
        .split('|')
        .map((n) => n.trim())
        .sort(),
      [...podCommandNames].sort(),
    );
  });

  it('starts the pod commands on the bundle without NODE_EXTRA_CA_CERTS, the others on the ES modules with it', async () => {
    assert.equal(await startedWith(['run', '--rm', 'bb']), 'entry=berth-pod.cjs ca=unset');
    assert.equal(await startedWith(['gc']), 'entry=berth-pod.cjs ca=unset');
    assert.equal(await startedWith(['image', 'pull', 'x']), 'entry=berth.mjs ca=/ca.pem');
    assert.equal(await startedWith(['server']), 'entry=berth.mjs ca=/ca.pem');
    assert.equal(await startedWith(['cell', '--bbs', 'http://x']), 'entry=berth.mjs ca=/ca.pem');
  });

  it('starts the cluster client commands without NODE_EXTRA_CA_CERTS unless their server is https', async () => {
    assert.equal(await startedWith(['lrp', 'list']), 'entry=berth.mjs ca=unset');
    assert.equal(
      await startedWith(['system', 'status', 'shop', '--server', 'http://h:1']),
      'entry=berth.mjs ca=unset',
    );
    assert.equal(await startedWith(['cell', 'drain', 'c1']), 'entry=berth.mjs ca=unset');
    assert.equal(await startedWith(['--version']), 'entry=berth.mjs ca=unset');
    assert.equal(await startedWith([]), 'entry=berth.mjs ca=unset');
    assert.equal(await startedWith(['ps', '--server', 'https://h']), 'entry=berth.mjs ca=/ca.pem');
    assert.equal(await startedWith(['ps', '--server=https://h']), 'entry=berth.mjs ca=/ca.pem');
  });

  it('works through a symlink elsewhere (npm link, /usr/local/bin/berth)', async () => {
    const linkDir = mkdtempSync(join(tmpdir(), 'berth-link-'));
    try {
      symlinkSync(binBerth, join(linkDir, 'berth'));
      const result = await runProgram(join(linkDir, 'berth'), listArgs);
      assert.equal(result.code, 0, result.stderr);
      assert.equal(result.stdout.trim(), '[]');
    } finally {
      rmSync(linkDir, { recursive: true, force: true });
    }
  });

  it('a bundle older than tsc output (a build that stopped at tsc) is not used', async () => {
    const { atime, mtime } = statSync(bundle);
    const old = new Date(statSync(join(distCli, 'pod-main.js')).mtimeMs - 60_000);
    utimesSync(bundle, old, old);
    try {
      assert.equal(await startedWith(['list']), 'entry=berth.mjs ca=unset');
      const real = await runBerth(listArgs);
      assert.equal(real.code, 0, real.stderr);
      assert.equal(real.stdout.trim(), '[]');
    } finally {
      utimesSync(bundle, atime, mtime);
    }
  });

  it('a pod command leaves a V8 code cache for the bundle it ran, and the next ones run with it', async () => {
    // A copy of the launcher and the bundle of its own, so no other test's pod command can write
    // the cache meanwhile: bin/, dist/cli/ and build/ (the native addon) as in a checkout.
    const tree = mkdtempSync(join(tmpdir(), 'berth-cache-'));
    try {
      mkdirSync(join(tree, 'bin'));
      mkdirSync(join(tree, 'dist', 'cli'), { recursive: true });
      for (const file of ['berth-pod.cjs', 'cached-bundle.cjs'])
        copyFileSync(join(binBerth, '..', file), join(tree, 'bin', file));
      copyFileSync(bundle, join(tree, 'dist', 'cli', 'pod-main.bundle.cjs'));
      symlinkSync(join(binBerth, '..', '..', 'build'), join(tree, 'build'));
      const cli = join(tree, 'dist', 'cli');
      const caches = () => readdirSync(cli).filter((n) => n.includes('.v8cache'));
      const list = async () => {
        const result = await runProgram(process.execPath, [join(tree, 'bin', 'berth-pod.cjs'), ...listArgs]);
        assert.equal(result.code, 0, result.stderr);
        assert.equal(result.stdout.trim(), '[]');
      };
      const { size, mtimeMs } = statSync(join(cli, 'pod-main.bundle.cjs'));
      await list();
      assert.deepEqual(caches(), [`pod-main.bundle.cjs.${size}-${Math.trunc(mtimeMs)}.v8cache`]);
      const cache = join(cli, caches()[0] ?? '');
      const written = statSync(cache).mtimeMs;
      await list();
      assert.equal(statSync(cache).mtimeMs, written, 'an accepted cache is not written again');
      // A cache V8 refuses (here: garbage) is replaced, and the command still runs.
      writeFileSync(cache, 'not a code cache');
      await list();
      assert.notEqual(readFileSync(cache, 'utf8').slice(0, 16), 'not a code cache');
      assert.equal(caches().length, 1, 'no temporary file left');
    } finally {
      rmSync(tree, { recursive: true, force: true });
    }
  });

  it('the stage-1 holder leaves a V8 code cache for its bundle too', async () => {
    const tree = mkdtempSync(join(tmpdir(), 'berth-holder-cache-'));
    try {
      mkdirSync(join(tree, 'bin'));
      const runtimeDir = join(tree, 'dist', 'runtime');
      mkdirSync(runtimeDir, { recursive: true });
      for (const file of ['berth-holder.cjs', 'cached-bundle.cjs'])
        copyFileSync(join(binBerth, '..', file), join(tree, 'bin', file));
      const holderBundle = join(distCli, '..', 'runtime', 'stage1-holder.bundle.cjs');
      copyFileSync(holderBundle, join(runtimeDir, 'stage1-holder.bundle.cjs'));
      const caches = () => readdirSync(runtimeDir).filter((n) => n.includes('.v8cache'));
      // A pod that does not exist: the holder says so and exits, leaving the cache of what it ran.
      const result = await runProgram(process.execPath, [
        join(tree, 'bin', 'berth-holder.cjs'),
        join(tree, 'data'),
        '00000000-0000-4000-8000-000000000000',
        'keep',
      ]);
      assert.notEqual(result.code, 0);
      const { size, mtimeMs } = statSync(join(runtimeDir, 'stage1-holder.bundle.cjs'));
      assert.deepEqual(caches(), [`stage1-holder.bundle.cjs.${size}-${Math.trunc(mtimeMs)}.v8cache`]);
    } finally {
      rmSync(tree, { recursive: true, force: true });
    }
  });
});
