import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { busyboxResolver } from '../testing/busybox-image.js';
import { readInLayeredRoot } from './layered-root.js';
import { mountsUnder } from './mounts.js';
import { collectGarbage } from './pod-gc.js';
import { readLogTail } from './pod-log-reader.js';
import { PodRuntime, type PrepareOptions } from './pod-runtime.js';
import { checkMountTarget, parseMountFlag, parseShortVolume, parseVolumeFlag } from './pod-volumes.js';

/** Volumes of pods against real runc and real bind mounts. */
const images = busyboxResolver();
const dirs: string[] = [];

function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}

after(() => {
  for (const dir of dirs) {
    try {
      if (existsSync(join(dir, 'pods')))
        collectGarbage(new PodRuntime(dir, images), { gracePeriodMs: 0, expirePreparedMs: 0 });
    } catch {
      // Removed below all the same.
    }
    for (const point of mountsUnder(dir)) spawnSync('umount', ['-l', point]);
    rmSync(dir, { recursive: true, force: true });
  }
});

/** Runs a pod detached to its end; returns it (still there: not removed). */
async function runToEnd(runtime: PodRuntime, options: PrepareOptions) {
  const prepared = await runtime.prepare('bb', { net: 'none', ...options });
  assert.ok(runtime.store.move(prepared.location, 'run'));
  const location = { uuid: prepared.location.uuid, phase: 'run' as const };
  await runtime.startDetached(location, prepared.lockFd);
  const done = await runtime.waitExit(location.uuid, 30_000);
  return { ...done, log: readLogTail(runtime.store.path(done)).text };
}

describe('volume flags', () => {
  it('parses rkt volumes, mounts and the -v short forms', () => {
    assert.deepEqual(parseVolumeFlag('data,kind=host,source=/srv/d,readOnly=true'), {
      name: 'data',
      kind: 'host',
      source: '/srv/d',
      readOnly: true,
    });
    assert.deepEqual(parseVolumeFlag('scratch,kind=empty,size=8m'), {
      name: 'scratch',
      kind: 'empty',
      readOnly: false,
      tmpfsBytes: 8 * 1024 * 1024,
    });
    assert.deepEqual(parseMountFlag('volume=data,target=/d'), {
      volume: 'data',
      target: '/d',
      readOnly: false,
    });
    assert.deepEqual(parseShortVolume('/srv/x:/x:ro', 2), {
      volume: { name: 'host-2', kind: 'host', source: '/srv/x', readOnly: true },
      mount: { volume: 'host-2', target: '/x', readOnly: true },
    });
    assert.deepEqual(parseShortVolume('pgdata:/var/lib/pg', 0).volume, {
      name: 'pgdata',
      kind: 'named',
      source: 'pgdata',
      readOnly: false,
    });
    assert.throws(() => parseVolumeFlag('v,kind=nfs'), /kind must be host or empty/);
    assert.throws(() => parseVolumeFlag('v,kind=host'), /kind=host needs source/);
    assert.throws(() => parseShortVolume('a:b:c:d', 0), /expected SOURCE:\/container/);
    assert.throws(() => checkMountTarget('/proc/sys'), /\/proc is the kernel's/);
    assert.throws(() => checkMountTarget('/sys'), /\/sys is the kernel's/);
    assert.throws(() => checkMountTarget('/a/../proc'), /expected an absolute path/);
    assert.equal(checkMountTarget('/data/'), '/data');
  });
});

describe('volumes of pods', () => {
  it('data written to a named volume survives `rm` of the pod and is there in a new pod; rm of the volume waits for its pods', async () => {
    const runtime = new PodRuntime(tempDir('berth-vol-'), images);
    const volume = { name: 'data', kind: 'named' as const, source: 'keep' };
    const mount = { volume: 'data', target: '/data' };
    const first = await runToEnd(runtime, {
      args: ['sh', '-c', 'echo row1 >> /data/table; cat /data/table'],
      volumes: [volume],
      mounts: [mount],
    });
    assert.equal(first.exit?.exit_code, 0);
    await assert.rejects(runtime.volumes.remove('keep'), new RegExp(`pod ${first.uuid} uses it`));
    await runtime.remove(first.uuid);
    const second = await runToEnd(runtime, {
      args: ['sh', '-c', 'echo row2 >> /data/table; cat /data/table'],
      volumes: [volume],
      mounts: [mount],
    });
    assert.equal(second.log, 'row1\nrow2\n');
    assert.deepEqual(runtime.volumes.users('keep'), [second.uuid]);
    await runtime.remove(second.uuid);
    await runtime.volumes.remove('keep');
    assert.deepEqual(runtime.volumes.list(), []);
  });

  it('a file the app wrote is found after its end where the app saw it: in a volume mounted there, else in its root', async () => {
    const runtime = new PodRuntime(tempDir('berth-vol-'), images);
    const done = await runToEnd(runtime, {
      args: [
        'sh',
        '-c',
        'echo named > /data/out; echo empty > /e/out; echo root > /out; ln -s /etc/passwd /data/escape',
      ],
      volumes: [
        { name: 'data', kind: 'named', source: 'results' },
        { name: 'e', kind: 'empty' },
        { name: 't', kind: 'empty', tmpfsBytes: 1024 * 1024 },
      ],
      mounts: [
        { volume: 'data', target: '/data' },
        { volume: 'e', target: '/e' },
        { volume: 't', target: '/data/t' },
      ],
    });
    assert.equal(done.exit?.exit_code, 0, done.log);
    const info = runtime.status(done.uuid);
    const read = (path: string) => {
      const where = runtime.store.fileLayers(info, path);
      return where && readInLayeredRoot(where.layers, where.path, 1024)?.toString();
    };
    assert.equal(read('/data/out'), 'named\n');
    assert.equal(read('/data/../e/./out'), 'empty\n');
    assert.equal(read('/out'), 'root\n');
    assert.equal(read('/etc/hostname') !== undefined, true, "the image's own files are there too");
    // A link in a volume resolves inside it, never to the host's file of that name.
    assert.equal(read('/data/escape'), undefined);
    // Under the deepest mount: a tmpfs, gone with the pod's run.
    assert.equal(runtime.store.fileLayers(info, '/data/t/x'), undefined);
    await runtime.remove(done.uuid);
    await runtime.volumes.remove('results');
  });

  it('a read-only host volume refuses writes; a writable one takes them', async () => {
    const runtime = new PodRuntime(tempDir('berth-vol-'), images);
    const host = tempDir('berth-vol-src-');
    writeFileSync(join(host, 'given'), 'from the host\n');
    const done = await runToEnd(runtime, {
      args: ['sh', '-c', 'cat /ro/given; echo x > /ro/new || echo refused; echo y > /rw/new && echo written'],
      volumes: [
        { name: 'ro', kind: 'host', source: host, readOnly: true },
        { name: 'rw', kind: 'host', source: host },
      ],
      mounts: [
        { volume: 'ro', target: '/ro' },
        { volume: 'rw', target: '/rw' },
      ],
    });
    assert.equal(done.exit?.exit_code, 0, done.log);
    const lines = done.log.split('\n');
    assert.deepEqual(
      lines.filter((l) => ['from the host', 'refused', 'written'].includes(l)),
      ['from the host', 'refused', 'written'],
      done.log,
    );
    assert.ok(
      lines.some((l) => l.includes('Read-only file system')),
      done.log,
    );
    assert.equal(readFileSync(join(host, 'new'), 'utf8'), 'y\n');
  });

  it('a host source reached through a symlink, or missing, is refused with a clear error and no pod is made', async () => {
    const runtime = new PodRuntime(tempDir('berth-vol-'), images);
    const host = tempDir('berth-vol-src-');
    symlinkSync('/etc', join(host, 'link'));
    mkdirSync(join(host, 'real'));
    symlinkSync(join(host, 'real'), join(host, 'alias'));
    const attempt = (source: string) =>
      runtime.prepare('bb', {
        args: ['true'],
        volumes: [{ name: 'v', kind: 'host', source }],
        mounts: [{ volume: 'v', target: '/v' }],
      });
    await assert.rejects(
      attempt(join(host, 'link')),
      /host source .*\/link is reached through a symlink \(it leads to \/etc\)/,
    );
    await assert.rejects(attempt(join(host, 'alias', '.')), /reached through a symlink/);
    await assert.rejects(attempt(join(host, 'missing')), /host source .*\/missing does not exist/);
    await assert.rejects(
      runtime.prepare('bb', {
        args: ['true'],
        volumes: [{ name: 'v', kind: 'host', source: host }],
        mounts: [{ volume: 'v', target: '/proc/x' }],
      }),
      /\/proc is the kernel's/,
    );
    assert.deepEqual(runtime.store.list(), [], 'no pod, not even a failed prepare');
  });

  it('an empty volume on a tmpfs is shared by the apps of a pod and unmounted when the pod ends', async () => {
    const runtime = new PodRuntime(tempDir('berth-vol-'), images);
    const done = await runToEnd(runtime, {
      args: ['sh', '-c', 'echo shared > /s/note; sleep 2'],
      volumes: [{ name: 's', kind: 'empty', tmpfsBytes: 8 * 1024 * 1024 }],
      mounts: [{ volume: 's', target: '/s' }],
      sideApps: [
        {
          image: 'bb',
          name: 'reader',
          args: ['sh', '-c', 'sleep 1; cat /t/note; df /t | tail -1'],
          mounts: [{ volume: 's', target: '/t', readOnly: true }],
        },
      ],
    });
    assert.deepEqual(
      done.exit?.apps?.map((a) => a.exit_code),
      [0, 0],
    );
    const reader = readLogTail(join(runtime.store.path(done), 'apps', 'reader')).text;
    assert.match(reader, /^shared\ntmpfs\s+8192\s/);
    assert.deepEqual(mountsUnder(runtime.store.path(done)), []);
  });
});
