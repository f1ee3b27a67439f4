import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { busyboxResolver } from '../testing/busybox-image.js';
import { mountsUnder } from './mounts.js';
import { podApps } from './pod-apps.js';
import { podCgroupExists } from './pod-cgroup.js';
import { collectGarbage } from './pod-gc.js';
import { readLogTail } from './pod-log-reader.js';
import { PodRuntime, type PrepareOptions } from './pod-runtime.js';

/**
 * Pods of several apps against real runc: each app a container of its own joining the pod's
 * shared namespaces, all under the one pod dir, lock and lifecycle.
 */
const images = busyboxResolver();
const dirs: string[] = [];

function newRuntime(): PodRuntime {
  const dir = mkdtempSync(join(tmpdir(), 'berth-apps-'));
  dirs.push(dir);
  return new PodRuntime(dir, images);
}

after(() => {
  for (const dir of dirs) {
    const runcRoot = join(dir, 'runc');
    if (existsSync(runcRoot))
      for (const id of readdirSync(runcRoot))
        spawnSync('runc', ['--root', runcRoot, 'delete', '--force', id]);
    try {
      collectGarbage(new PodRuntime(dir, images), { gracePeriodMs: 0, expirePreparedMs: 0 });
    } catch {
      // A dir a test left half made: removed below all the same.
    }
    for (const point of mountsUnder(dir)) spawnSync('umount', ['-l', point]);
    rmSync(dir, { recursive: true, force: true });
  }
});

async function startDetached(runtime: PodRuntime, options: PrepareOptions): Promise<string> {
  const prepared = await runtime.prepare('bb', options);
  assert.ok(runtime.store.move(prepared.location, 'run'));
  const location = { uuid: prepared.location.uuid, phase: 'run' as const };
  await runtime.startDetached(location, prepared.lockFd);
  return location.uuid;
}

const server = ['sh', '-c', 'httpd -f -p 8080 -h /etc & echo serving; sleep 3'];
const client = ['sh', '-c', 'sleep 0.5; wget -q -O - http://127.0.0.1:8080/hostname && exit 4'];

describe('pods of several apps', () => {
  it('two apps talk over 127.0.0.1 and see one hostname; each has its own rootfs, process tree and exit code', async () => {
    const runtime = newRuntime();
    const uuid = await startDetached(runtime, {
      name: 'duo',
      net: 'none',
      args: server,
      appName: 'web',
      sideApps: [
        { image: 'bb', name: 'client', args: client },
        {
          image: 'bb',
          name: 'own',
          args: ['sh', '-c', 'echo mine > /only-here; ps -o pid,args | wc -l; exit 0'],
        },
      ],
    });
    const done = await runtime.waitExit(uuid, 30_000);
    assert.equal(done.state, 'exited');
    assert.deepEqual(
      done.exit?.apps?.map((a) => [a.name, a.exit_code]),
      [
        ['web', 0],
        ['client', 4],
        ['own', 0],
      ],
    );
    assert.equal(done.exit?.exit_code, 4, 'the first non-zero code, in app order');
    const path = runtime.store.path(done);
    assert.equal(
      readLogTail(join(path, 'apps', 'client')).text,
      'duo\n',
      "the server's /etc/hostname, over lo",
    );
    assert.match(readLogTail(path).text, /serving/);
    // Own pid namespace: `ps` sees the app's shell, ps itself, wc (and the header line).
    assert.ok(Number(readLogTail(join(path, 'apps', 'own')).text.trim()) <= 5);
    assert.ok(existsSync(join(path, 'apps', 'own', 'upper', 'only-here')));
    assert.ok(!existsSync(join(path, 'upper', 'only-here')), 'the first app has a root of its own');
  });

  it('--exit-on-first: the first app to exit stops the others, and gives the pod its code', async () => {
    const runtime = newRuntime();
    const uuid = await startDetached(runtime, {
      net: 'none',
      args: ['sh', '-c', 'sleep 0.5; exit 7'],
      exitOnFirst: true,
      sideApps: [{ image: 'bb', name: 'stays', args: ['sh', '-c', 'trap "exit 3" TERM; sleep 1000 & wait'] }],
    });
    const running = runtime.status(uuid);
    assert.equal(running.state, 'running');
    const done = await runtime.waitExit(uuid, 30_000);
    assert.equal(done.exit?.exit_code, 7);
    assert.deepEqual(
      done.exit?.apps?.map((a) => [a.name, a.exit_code]),
      [
        ['bb', 7],
        ['stays', 3],
      ],
    );
  });

  it('without --exit-on-first the pod runs on until its last app exits; status tells which have ended', async () => {
    const runtime = newRuntime();
    const uuid = await startDetached(runtime, {
      net: 'none',
      args: ['true'],
      sideApps: [{ image: 'bb', name: 'later', args: ['sleep', '1000'] }],
    });
    for (let i = 0; i < 100 && (runtime.status(uuid).appExits?.length ?? 0) === 0; i++)
      await new Promise((r) => setTimeout(r, 50));
    const info = runtime.status(uuid);
    assert.equal(info.state, 'running');
    assert.deepEqual(
      info.appExits?.map((a) => [a.name, a.exit_code]),
      [['bb', 0]],
    );
    const stopped = await runtime.stop(uuid, 2000);
    assert.deepEqual(
      stopped.exit?.apps?.map((a) => [a.name, a.exit_code]),
      [
        ['bb', 0],
        ['later', 137],
      ],
    );
  });

  it('kill -9 of the stage-1 holder: the watcher kills every app; gc then leaves nothing of either container', async () => {
    const runtime = newRuntime();
    const uuid = await startDetached(runtime, {
      net: 'private',
      args: ['sleep', '1000'],
      sideApps: [{ image: 'bb', name: 'side', args: ['sleep', '1000'] }],
    });
    const path = runtime.store.path({ uuid, phase: 'run' });
    const manifest = runtime.store.readManifest({ uuid, phase: 'run' });
    assert.ok(manifest);
    const ids = podApps(manifest).map((a) => a.containerId);
    assert.deepEqual(ids, [uuid, `${uuid}.side`]);
    for (const id of ids) assert.ok(existsSync(join(runtime.store.dirs.runc, id)));
    process.kill(Number(readFileSync(join(path, 'holder.pid'), 'utf8')), 'SIGKILL');
    const done = await runtime.waitExit(uuid, 30_000);
    assert.equal(done.state, 'exited');
    assert.match(done.exit?.reason ?? '', /stage-1 holder was killed/);
    const report = collectGarbage(runtime, { gracePeriodMs: 0, expirePreparedMs: 86_400_000 });
    assert.deepEqual(report.deleted, [uuid]);
    for (const id of ids) assert.ok(!existsSync(join(runtime.store.dirs.runc, id)), `${id} is gone`);
    assert.ok(!podCgroupExists(uuid));
  });

  it('gc leaves a running pod of several apps alone, even when its first app has ended', async () => {
    const runtime = newRuntime();
    const uuid = await startDetached(runtime, {
      net: 'none',
      args: ['true'],
      sideApps: [{ image: 'bb', name: 'on', args: ['sleep', '1000'] }],
    });
    for (let i = 0; i < 100 && (runtime.status(uuid).appExits?.length ?? 0) === 0; i++)
      await new Promise((r) => setTimeout(r, 50));
    const report = collectGarbage(runtime, { gracePeriodMs: 0, expirePreparedMs: 0 });
    assert.deepEqual([report.marked, report.deleted], [[], []]);
    assert.equal(runtime.status(uuid).state, 'running', 'the second app holds the lock');
    await runtime.stop(uuid, 0);
    const after = collectGarbage(runtime, { gracePeriodMs: 0, expirePreparedMs: 0 });
    assert.deepEqual(after.deleted, [uuid]);
  });

  it('two run-prepared of a pod of several apps: exactly one runs it', async () => {
    const runtime = newRuntime();
    const uuid = await runtime.prepareOnly('bb', {
      net: 'none',
      args: ['sleep', '0.5'],
      sideApps: [{ image: 'bb', name: 'two', args: ['sleep', '0.5'] }],
    });
    const outcomes = await Promise.allSettled(
      [0, 1].map(async () => {
        const claimed = runtime.claimPrepared(uuid);
        await runtime.startDetached(claimed.location, claimed.lockFd);
      }),
    );
    assert.deepEqual(outcomes.map((o) => o.status).sort(), ['fulfilled', 'rejected']);
    const done = await runtime.waitExit(uuid, 30_000);
    assert.deepEqual(
      done.exit?.apps?.map((a) => a.exit_code),
      [0, 0],
    );
  });

  it('refuses clashing app names and an unknown volume in a mount, leaving no pod', async () => {
    const runtime = newRuntime();
    await assert.rejects(
      runtime.prepare('bb', { args: ['true'], sideApps: [{ image: 'bb', args: ['true'] }] }),
      /Two apps of the pod are named "bb": give one --app-name/,
    );
    await assert.rejects(
      runtime.prepare('bb', {
        args: ['true'],
        sideApps: [{ image: 'bb', name: 'x', args: ['true'], mounts: [{ volume: 'nope', target: '/d' }] }],
      }),
      /App "x" mounts volume "nope", which the pod does not have/,
    );
    assert.deepEqual(runtime.store.list(), []);
  });
});
