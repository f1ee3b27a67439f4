import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { mountsUnder } from '../runtime/mounts.js';
import { podCgroupExists } from '../runtime/pod-cgroup.js';
import { runBerth, spawnBerth } from '../testing/berth-cli.js';
import { makeBusyboxRootfs } from '../testing/busybox-rootfs.js';

/** The pod commands end to end: real image store, real runc, every command as its own process. */
const dir = mkdtempSync(join(tmpdir(), 'berth-cli-pods-'));
const berth = (...args: string[]) => runBerth([...args.slice(0, 1), '--dir', dir, ...args.slice(1)]);

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

describe('berth run', () => {
  it('streams the app output and exits with its code; ARGS replace the image Cmd', async () => {
    const result = await berth('run', '--rm', 'bb:1', '--', 'sh', '-c', 'echo hello; echo oops >&2; exit 42');
    assert.equal(result.code, 42);
    assert.equal(result.stdout, 'hello\n');
    assert.match(result.stderr, /oops/);
  });

  it('keeps node:child_process and node:crypto off the path of `run --net none`', async () => {
    // The builtins a command loaded, written by a preloaded module as the process exits: a run
    // starts runc through berth's addon and makes its UUID with getrandom (native-process.ts),
    // and the bundle loads these builtins only when something calls them (bundle-pod-cli.mjs).
    const report = join(dir, 'loaded-builtins.cjs');
    writeFileSync(
      report,
      "process.on('exit', () => require('node:fs').writeSync(2, '\\nloaded: ' + process.moduleLoadList.filter((m) => m.startsWith('NativeModule ')).map((m) => m.slice(13)).join(' ') + '\\n'));\n",
    );
    const result = await runBerth(['run', '--rm', '--dir', dir, '--net', 'none', 'bb:1', '--', 'true'], {
      NODE_OPTIONS: `--require ${report}`,
    });
    assert.equal(result.code, 0, result.stderr);
    const loaded = /loaded: (.*)/.exec(result.stderr)?.[1]?.split(' ') ?? [];
    assert.ok(loaded.includes('fs'), `the report lists builtins: ${result.stderr}`);
    for (const heavy of ['child_process', 'crypto', 'fs/promises', 'zlib'])
      assert.ok(!loaded.includes(heavy), `${heavy} was loaded: ${loaded.join(' ')}`);
  });

  it('honours --env, --workdir, --user, --entrypoint and the default PATH', async () => {
    const result = await berth(
      'run',
      '--rm',
      '--env',
      'GREETING=hi',
      '--workdir',
      '/tmp/work',
      '--user',
      'nobody',
      '--entrypoint',
      '/bin/sh',
      'bb:1',
      '--',
      '-c',
      'echo $GREETING $(pwd) $(id -u) $PATH',
    );
    assert.equal(result.code, 0, result.stderr);
    assert.equal(
      result.stdout,
      'hi /tmp/work 65534 /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n',
    );
  });

  it('--detach prints the UUID alone and the pod keeps running; status, logs, enter, stop, rm', async () => {
    const started = await berth(
      'run',
      '--detach',
      '--name',
      'web',
      'bb:1',
      '--',
      'sh',
      '-c',
      'echo ready; exec sleep 1000',
    );
    assert.equal(started.code, 0, started.stderr);
    const uuid = started.stdout.trim();
    assert.match(started.stdout, /^[0-9a-f-]{36}\n$/);
    const status = JSON.parse((await berth('status', '--format', 'json', uuid)).stdout) as Record<
      string,
      unknown
    >;
    assert.equal(status.state, 'running');
    assert.equal(status.name, 'web');
    assert.ok(typeof status.pid === 'number');
    const logs = await berth('logs', 'web');
    assert.equal(logs.stdout, 'ready\n');
    const entered = await berth('enter', uuid, '--', 'sh', '-c', 'echo inside $(hostname)');
    assert.equal(entered.code, 0, entered.stderr);
    const removeRunning = await berth('rm', uuid);
    assert.notEqual(removeRunning.code, 0);
    assert.match(removeRunning.stderr, /current state is running/);
    const stopped = await berth('stop', '--timeout', '1', uuid);
    assert.equal(stopped.code, 0, stopped.stderr);
    const waited = await berth('status', '--wait', uuid);
    assert.equal(waited.code, 137, 'status --wait exits with the app code (SIGKILL after the timeout)');
    assert.equal((await berth('rm', uuid)).code, 0);
    assert.equal((await berth('status', uuid)).code, 3);
  });

  it('status --wait=TIMEOUT gives up with a clear error on a pod that keeps running', async () => {
    const uuid = (await berth('run', '-d', 'bb:1', '--', 'sleep', '1000')).stdout.trim();
    const waited = await berth('status', '--wait=200ms', uuid);
    assert.notEqual(waited.code, 0);
    assert.match(waited.stderr, /Timed out after 200 ms/);
    await berth('stop', '--timeout', '0', uuid);
  });

  it('--pids-limit: 2048 by default as podman, a count of its own, 0 or -1 for none', async () => {
    const pidsMax = [
      'sh',
      '-c',
      'cat /sys/fs/cgroup/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids/pids.max',
    ];
    const read = async (...flags: string[]) => {
      const result = await berth('run', '--rm', '--net', 'none', ...flags, 'bb:1', '--', ...pidsMax);
      assert.equal(result.code, 0, result.stderr);
      return result.stdout.trim();
    };
    assert.equal(await read(), '2048');
    assert.equal(await read('--pids-limit', '100'), '100');
    assert.equal(await read('--pids-limit', '0'), 'max');
    assert.equal(await read('--pids-limit=-1'), 'max');
  });

  it('prepare prints the UUID alone; run-prepared runs it; list --format json has the fields', async () => {
    const prepared = await berth('prepare', 'bb:1', '--', 'sh', '-c', 'exit 5');
    assert.match(prepared.stdout, /^[0-9a-f-]{36}\n$/);
    const uuid = prepared.stdout.trim();
    const ran = await berth('run-prepared', uuid);
    assert.equal(ran.code, 5);
    const again = await berth('run-prepared', uuid);
    assert.notEqual(again.code, 0);
    assert.match(again.stderr, /already started/);
    const list = JSON.parse((await berth('list', '--format', 'json')).stdout) as Record<string, unknown>[];
    const pod = list.find((p) => p.uuid === uuid);
    assert.ok(pod);
    for (const field of ['uuid', 'state', 'image', 'created', 'started', 'exit_code'])
      assert.ok(field in pod, field);
    assert.equal(pod.state, 'exited');
    assert.equal(pod.exit_code, 5);
    assert.equal(pod.image, 'bb:1');
    const table = await berth('list', '--no-legend');
    assert.ok(table.stdout.split('\n').some((line) => line.startsWith(uuid)));
    assert.ok(!table.stdout.includes('UUID'));
  });
});

describe('output through a pipe', () => {
  const twoMegabytes = ['sh', '-c', 'yes 0123456789 | head -c 2000000; exit 3'];

  it('a reader that takes its time still gets every byte of a foreground pod', async () => {
    const child = spawnBerth(['run', '--rm', '--dir', dir, '--net', 'none', 'bb:1', '--', ...twoMegabytes]);
    // Not reading for a while: berth has queued far more than the pipe holds when the app ends.
    child.stdout?.pause();
    await sleep(500);
    let bytes = 0;
    child.stdout?.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
    });
    child.stdout?.resume();
    const code = await new Promise((resolve) => child.once('close', resolve));
    assert.equal(code, 3);
    assert.equal(bytes, 2_000_000);
  });

  it('a reader that goes away: the foreground pod runs to its end, berth exits with its code', async () => {
    const child = spawnBerth(['run', '--dir', dir, '--net', 'none', 'bb:1', '--', ...twoMegabytes]);
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    await new Promise((resolve) => child.stdout?.once('data', resolve));
    child.stdout?.destroy();
    const code = await new Promise((resolve) => child.once('close', resolve));
    assert.equal(code, 3, stderr);
    assert.equal(stderr, '');
    // The whole output is in the pod's log, which `logs` with a reader gone ends like SIGPIPE would.
    const list = JSON.parse((await berth('list', '--format', 'json')).stdout) as {
      uuid: string;
      exit_code: number;
    }[];
    const pod = list.find((p) => p.exit_code === 3);
    assert.ok(pod);
    const logs = await berth('logs', pod.uuid);
    assert.equal(logs.stdout.length, 2_000_000);
    const cut = spawnBerth(['logs', '--dir', dir, pod.uuid]);
    let cutStderr = '';
    cut.stderr?.on('data', (chunk: Buffer) => {
      cutStderr += chunk.toString();
    });
    await new Promise((resolve) => cut.stdout?.once('data', resolve));
    cut.stdout?.destroy();
    assert.equal(await new Promise((resolve) => cut.once('close', resolve)), 141);
    assert.equal(cutStderr, '');
    assert.equal((await berth('rm', pod.uuid)).code, 0);
  });
});

describe('logs have a size cap (issue 17)', () => {
  const mib = 1024 * 1024;
  // 30 MB of "y\n", then a last line: 15 times the 1 MiB cap given with --log-size-max.
  const flood = ['sh', '-c', 'yes | head -c 30000000; echo THE-END'];
  const logBytesOnDisk = (uuid: string): number => {
    const podDir = join(dir, 'pods', 'run', uuid);
    return readdirSync(podDir)
      .filter((name) => name === 'log' || name.startsWith('log.'))
      .reduce((sum, name) => sum + statSync(join(podDir, name)).size, 0);
  };

  it('a detached pod that floods keeps at most 2 × the cap on disk; logs shows the end', async () => {
    const started = await berth('run', '-d', '--net', 'none', '--log-size-max', '1m', 'bb:1', '--', ...flood);
    assert.equal(started.code, 0, started.stderr);
    const uuid = started.stdout.trim();
    assert.equal((await berth('status', '--wait', uuid)).code, 0);
    const onDisk = logBytesOnDisk(uuid);
    assert.ok(onDisk <= 2 * mib, `${onDisk} bytes of log on disk`);
    const logs = await berth('logs', uuid);
    assert.equal(logs.code, 0, logs.stderr);
    // The app's lines without their records' times and streams: every line kept is whole.
    assert.ok(logs.stdout.length > 0 && logs.stdout.length < onDisk, `${logs.stdout.length} bytes shown`);
    assert.match(logs.stdout, /^(y\n)+THE-END\n$/);
    assert.equal((await berth('rm', uuid)).code, 0);
  });

  it('a foreground pod streams all of its output and keeps only the capped log', async () => {
    const child = spawnBerth([
      'run',
      '--dir',
      dir,
      '--net',
      'none',
      '--log-size-max',
      '1m',
      'bb:1',
      '--',
      ...flood,
    ]);
    let bytes = 0;
    let last = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      last = (last + chunk.toString()).slice(-20);
    });
    assert.equal(await new Promise((resolve) => child.once('close', resolve)), 0);
    assert.equal(bytes, 30_000_000 + 'THE-END\n'.length);
    assert.ok(last.endsWith('THE-END\n'));
    const list = JSON.parse((await berth('list', '--format', 'json')).stdout) as {
      uuid: string;
      command: string[];
    }[];
    const pod = list.find(
      (p) => p.command.join(' ') === flood.join(' ') && existsSync(join(dir, 'pods', 'run', p.uuid)),
    );
    assert.ok(pod);
    const onDisk = logBytesOnDisk(pod.uuid);
    assert.ok(onDisk <= 2 * mib, `${onDisk} bytes of log on disk`);
    assert.equal((await berth('rm', pod.uuid)).code, 0);
  });

  it('logs -f follows a pod across rotations: every line once, in order', async () => {
    // 400 lines of 100 bytes, paced, with an 8 KiB cap: the log rotates about five times.
    const script =
      'i=0; while [ $i -lt 400 ]; do printf "line %05d %090d\\n" $i 0; i=$((i+1)); usleep 10000; done';
    const started = await berth(
      'run',
      '-d',
      '--net',
      'none',
      '--log-size-max',
      '8k',
      'bb:1',
      '--',
      'sh',
      '-c',
      script,
    );
    assert.equal(started.code, 0, started.stderr);
    const uuid = started.stdout.trim();
    const followed = await berth('logs', '-f', uuid);
    assert.equal(followed.code, 0, followed.stderr);
    const lines = followed.stdout.trimEnd().split('\n');
    assert.deepEqual(
      lines.map((line) => Number(line.split(' ')[1])),
      Array.from({ length: 400 }, (_, i) => i),
    );
    assert.ok(logBytesOnDisk(uuid) <= 16 * 1024);
    assert.equal((await berth('rm', uuid)).code, 0);
  });
});

describe('logs keep the time and stream of each line', () => {
  it('a detached pod printing to stdout and stderr with pauses: distinct times in order, each on its stream', async () => {
    const script = 'for i in 1 2 3; do echo "out $i"; usleep 150000; echo "err $i" >&2; usleep 150000; done';
    const started = await berth('run', '-d', '--net', 'none', 'bb:1', '--', 'sh', '-c', script);
    assert.equal(started.code, 0, started.stderr);
    const uuid = started.stdout.trim();
    assert.equal((await berth('status', '--wait', uuid)).code, 0);
    const logs = await berth('logs', '--timestamps', uuid);
    assert.equal(logs.code, 0, logs.stderr);
    const parse = (text: string) =>
      text
        .trimEnd()
        .split('\n')
        .map((line) => {
          const match = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z) (out|err) (\d)$/.exec(line);
          assert.ok(match, `a line with its time: ${line}`);
          return { ms: Date.parse(match[1] ?? ''), text: `${match[2]} ${match[3]}` };
        });
    const [out, err] = [parse(logs.stdout), parse(logs.stderr)];
    assert.deepEqual(
      out.map((l) => l.text),
      ['out 1', 'out 2', 'out 3'],
    );
    assert.deepEqual(
      err.map((l) => l.text),
      ['err 1', 'err 2', 'err 3'],
    );
    // Each line's own time: they interleave as printed, every one later than the one before.
    const all = [...out, ...err].sort((a, b) => a.ms - b.ms).map((l) => l.text);
    assert.deepEqual(all, ['out 1', 'err 1', 'out 2', 'err 2', 'out 3', 'err 3']);
    assert.equal(new Set([...out, ...err].map((l) => l.ms)).size, 6, 'six distinct times');
    // Without --timestamps, the app's bytes as it wrote them, each stream to its own.
    const plain = await berth('logs', uuid);
    assert.equal(plain.stdout, 'out 1\nout 2\nout 3\n');
    assert.equal(plain.stderr, 'err 1\nerr 2\nerr 3\n');
    assert.equal((await berth('rm', uuid)).code, 0);
  });

  it('a pod whose log an older berth wrote (no records) is shown as it is', async () => {
    const started = await berth('run', '-d', '--net', 'none', 'bb:1', '--', 'true');
    const uuid = started.stdout.trim();
    assert.equal((await berth('status', '--wait', uuid)).code, 0);
    writeFileSync(join(dir, 'pods', 'run', uuid, 'log'), 'written\nby berth 0.x\n');
    const logs = await berth('logs', uuid);
    assert.equal(logs.stdout, 'written\nby berth 0.x\n');
    assert.equal((await berth('rm', uuid)).code, 0);
  });
});

describe('bad input', () => {
  it('an unknown image is a clear error and leaves no pod behind', async () => {
    const before = readdirSync(join(dir, 'pods', 'prepare')).length;
    const result = await berth('run', 'nope:1', '--', 'true');
    assert.equal(result.code, 3);
    assert.match(result.stderr, /nope:1/);
    assert.equal(readdirSync(join(dir, 'pods', 'prepare')).length, before);
  });

  it('no runc on PATH: the pod ends with the reason, berth exits 125 naming runc, nothing left running', async () => {
    // A PATH with node alone: bin/berth still starts, and stage 1's spawn of runc fails.
    const nodeOnly = mkdtempSync(join(tmpdir(), 'berth-node-only-'));
    symlinkSync(process.execPath, join(nodeOnly, 'node'));
    try {
      const result = await runBerth(['run', '--dir', dir, '--net', 'none', 'bb:1', '--', 'true'], {
        PATH: nodeOnly,
      });
      assert.equal(result.code, 125, result.stderr);
      assert.match(result.stderr, /did not run: cannot run runc: ENOENT.*'runc'/);
      const uuid = /pod ([0-9a-f-]{36})/.exec(result.stderr)?.[1] ?? '';
      const status = await berth('status', '--format', 'json', uuid);
      const info = JSON.parse(status.stdout) as { state: string; exit_code: number | null; reason?: string };
      assert.equal(info.state, 'exited');
      assert.equal(info.exit_code, null);
      assert.match(info.reason ?? '', /cannot run runc/);
      assert.equal(podCgroupExists(uuid), false, 'the pod cgroup made for it is gone');
      assert.equal((await berth('rm', uuid)).code, 0);
    } finally {
      rmSync(nodeOnly, { recursive: true, force: true });
    }
  });

  it('bad flag values name the flag', async () => {
    for (const [args, pattern] of [
      [['run', '--net', 'wifi', 'bb:1'], /--net "wifi"/],
      [['run', '--memory', 'lots', 'bb:1'], /--memory "lots"/],
      [['run', '--pids-limit', 'x', 'bb:1'], /--pids-limit/],
      [['run', '--pids-limit=-2', 'bb:1'], /--pids-limit must be at least 1, or 0 or -1/],
      [
        ['run', '--log-size-max', '1k', 'bb:1'],
        /--log-size-max "1k": the log size cap must be from 8k to 16g/,
      ],
      [['run', '--log-size-max', 'big', 'bb:1'], /--log-size-max "big"/],
      [['run', '-p', '99999:80', 'bb:1'], /--publish "99999:80"/],
      [['run', '--name', 'bad name', 'bb:1'], /--name "bad name"/],
      [['run', '--user', 'ghost', 'bb:1', '--', 'true'], /Cannot find user "ghost"/],
      [['status', '--format', 'yaml', '00000000-0000-4000-8000-000000000000'], /--format "yaml"/],
    ] as const) {
      const result = await berth(...args);
      assert.notEqual(result.code, 0, args.join(' '));
      assert.match(result.stderr, pattern);
    }
  });
});
