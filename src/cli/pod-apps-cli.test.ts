import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { mountsUnder } from '../runtime/mounts.js';
import { runBerth } from '../testing/berth-cli.js';
import { makeBusyboxRootfs } from '../testing/busybox-rootfs.js';
import { podAppsOptions, splitApps } from './pod-app-args.js';

/** Pods of several apps and volumes from the command line: real image store, real runc. */
const dir = mkdtempSync(join(tmpdir(), 'berth-cli-apps-'));
const berth = (...args: string[]) => runBerth([...args.slice(0, 1), '--dir', dir, ...args.slice(1)]);
const volumeCmd = (...args: string[]) =>
  runBerth(['volume', ...args.slice(0, 1), '--dir', dir, ...args.slice(1)]);

before(async () => {
  const rootfs = makeBusyboxRootfs(join(dir, 'rootfs'));
  const imported = await runBerth(['image', 'import-rootfs', '--dir', dir, rootfs, '--name', 'bb:1']);
  assert.equal(imported.code, 0, imported.stderr);
});

after(() => {
  const runcRoot = join(dir, 'runc');
  if (existsSync(runcRoot))
    for (const id of readdirSync(runcRoot)) spawnSync('runc', ['--root', runcRoot, 'delete', '--force', id]);
  for (const point of mountsUnder(dir)) spawnSync('umount', ['-l', point]);
  rmSync(dir, { recursive: true, force: true });
});

describe('the apps of a pod on the command line', () => {
  it('splits at --- and gives each app its own flags, volumes shared by the pod', () => {
    assert.deepEqual(splitApps(['a', '---', '-e', 'X=1', 'img', '--', 'b']), {
      args: ['a'],
      others: [['-e', 'X=1', 'img', '--', 'b']],
    });
    const options = podAppsOptions({ 'app-name': 'web', volume: ['cache:/c'] }, [
      '---',
      '--app-name',
      'side',
      '-e',
      'A=1',
      '-u',
      'nobody',
      '-w',
      '/tmp',
      '--entrypoint',
      'sh',
      '-v',
      'cache:/d:ro',
      'bb:1',
      '--',
      '-c',
      'true',
    ]);
    assert.deepEqual(options, {
      args: [],
      appName: 'web',
      mounts: [{ volume: 'cache', target: '/c', readOnly: false }],
      sideApps: [
        {
          name: 'side',
          entrypoint: 'sh',
          env: ['A=1'],
          workdir: '/tmp',
          user: 'nobody',
          image: 'bb:1',
          args: ['-c', 'true'],
          mounts: [{ volume: 'cache', target: '/d', readOnly: true }],
        },
      ],
      volumes: [{ name: 'cache', kind: 'named', source: 'cache', readOnly: false }],
    });
    assert.throws(() => podAppsOptions({}, ['---', '--memory', '1g', 'bb:1']), /After "---": .*--memory/);
    assert.throws(() => podAppsOptions({}, ['---']), /After "---": expected \[FLAGS\] IMAGE/);
  });

  it('run IMAGE --- IMAGE: status --json lists each app with its state and code; logs and enter take --app', async () => {
    const started = await berth(
      'run',
      '-d',
      '--net',
      'none',
      '--app-name',
      'main',
      'bb:1',
      '--',
      'sh',
      '-c',
      'echo from-main; sleep 1000',
      '---',
      '--app-name',
      'helper',
      '-e',
      'WHO=helper',
      'bb:1',
      '--',
      'sh',
      '-c',
      'echo from-$WHO; exit 5',
    );
    assert.equal(started.code, 0, started.stderr);
    const uuid = started.stdout.trim();
    let status: { state: string; apps: { name: string; state: string; exit_code: number | null }[] } = {
      state: '',
      apps: [],
    };
    for (let i = 0; i < 100; i++) {
      status = JSON.parse((await berth('status', '--json', uuid)).stdout);
      if (status.apps[1]?.state === 'exited') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(status.state, 'running');
    assert.deepEqual(status.apps, [
      { name: 'main', image: 'bb:1', state: 'running', exit_code: null },
      { name: 'helper', image: 'bb:1', state: 'exited', exit_code: 5 },
    ]);
    assert.equal((await berth('logs', '--app', 'helper', uuid)).stdout, 'from-helper\n');
    assert.equal((await berth('logs', uuid)).stdout, 'from-main\n');
    const entered = await berth('enter', '--app', 'main', uuid, '--', 'cat', '/proc/1/cmdline');
    assert.equal(
      entered.stdout,
      'sleep\u00001000\u0000',
      "the main app's own process tree: its shell exec'd sleep",
    );
    const unknown = await berth('logs', '--app', 'nope', uuid);
    assert.match(unknown.stderr, /has no app "nope" \(its apps: main, helper\)/);
    assert.equal((await berth('stop', '-t', '1', uuid)).code, 0);
    const done = await berth('status', '--wait', uuid);
    assert.equal(done.code, 137, 'the first non-zero code in app order: main, killed by stop (helper had 5)');
  });

  it('berth volume create|list|inspect|rm, and -v NAME:/path keeps data across pods', async () => {
    assert.equal((await volumeCmd('create', 'db')).stdout, 'db\n');
    assert.match((await volumeCmd('create', 'db')).stderr, /Volume "db" already exists/);
    const write = await berth(
      'run',
      '--net',
      'none',
      '-v',
      'db:/data',
      'bb:1',
      '--',
      'sh',
      '-c',
      'echo kept > /data/f',
    );
    assert.equal(write.code, 0, write.stderr);
    const inUse = await volumeCmd('rm', 'db');
    assert.equal(inUse.code, 1);
    assert.match(inUse.stderr, /Cannot remove volume "db": pod .* uses it/);
    const listed = JSON.parse((await volumeCmd('list', '--json')).stdout) as { name: string }[];
    assert.deepEqual(
      listed.map((v) => v.name),
      ['db'],
    );
    const inspected = JSON.parse((await volumeCmd('inspect', 'db')).stdout) as { pods: string[] };
    assert.equal(inspected.pods.length, 1);
    assert.equal((await berth('rm', inspected.pods[0] ?? '')).code, 0);
    const read = await berth(
      'run',
      '--rm',
      '--net',
      'none',
      '-v',
      'db:/data:ro',
      'bb:1',
      '--',
      'cat',
      '/data/f',
    );
    assert.equal(read.stdout, 'kept\n');
    assert.equal((await volumeCmd('rm', 'db')).code, 0);
    assert.deepEqual(JSON.parse((await volumeCmd('list', '--json')).stdout), []);
  });

  it('a symlinked or missing host source is a clear error, and no pod is left', async () => {
    const podsNow = async () =>
      (JSON.parse((await berth('list', '--json')).stdout) as { uuid: string }[]).length;
    const before = await podsNow();
    mkdirSync(join(dir, 'real'));
    symlinkSync(join(dir, 'real'), join(dir, 'alias'));
    const linked = await berth('run', '-v', `${join(dir, 'alias')}:/x`, 'bb:1', '--', 'true');
    assert.equal(linked.code, 2);
    assert.match(
      linked.stderr,
      /is reached through a symlink \(it leads to .*\/real\); refusing to mount it/,
    );
    const missing = await berth(
      'run',
      '--volume',
      `m,kind=host,source=${join(dir, 'gone')}`,
      'bb:1',
      '--',
      'true',
    );
    assert.match(missing.stderr, /host source .*\/gone does not exist/);
    assert.equal(await podsNow(), before);
  });
});
