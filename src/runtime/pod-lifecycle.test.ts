import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { runBerth } from '../testing/berth-cli.js';
import { busyboxResolver } from '../testing/busybox-image.js';
import { pidsWithCmdline } from '../testing/processes-by-cmdline.js';
import { attachNetwork, detachNetwork, netnsPath } from './cni-network.js';
import { runForeground } from './foreground-run.js';
import { holderEntry } from './holder-start.js';
import { mountsUnder } from './mounts.js';
import { oomDetectable, podCgroupExists } from './pod-cgroup.js';
import { masqueradeRule, podSubnet } from './pod-firewall.js';
import { collectGarbage } from './pod-gc.js';
import { cniNetworkName, sliceIpamDataDir } from './pod-ipam.js';
import { readLogTail } from './pod-log-reader.js';
import type { PodExit } from './pod-manifest.js';
import { PodRuntime } from './pod-runtime.js';
import type { PodLocation } from './pod-store.js';

/**
 * The runtime against real runc, real overlayfs and real flock(2). Pods come from a busybox
 * rootfs below the image-store seam; the CLI tests import real images.
 */
const images = busyboxResolver();
const dirs: string[] = [];

function newRuntime(): PodRuntime {
  const dir = mkdtempSync(join(tmpdir(), 'berth-rt-'));
  dirs.push(dir);
  return new PodRuntime(dir, images);
}

async function startDetached(
  runtime: PodRuntime,
  args: string[],
  options: Parameters<PodRuntime['prepare']>[1] = {},
) {
  const prepared = await runtime.prepare('bb', { args, ...options });
  assert.ok(runtime.store.move(prepared.location, 'run'));
  const location = { uuid: prepared.location.uuid, phase: 'run' as const };
  await runtime.startDetached(location, prepared.lockFd);
  return location.uuid;
}

function collectStream(): NodeJS.WritableStream & { text(): string } {
  const chunks: Buffer[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc: string, cb: () => void) {
      chunks.push(Buffer.from(chunk));
      cb();
    },
  });
  return Object.assign(stream, { text: () => Buffer.concat(chunks).toString() });
}

/** Prepares a pod and runs it in the foreground to its end, its output collected. */
async function runToEnd(
  runtime: PodRuntime,
  options: Parameters<PodRuntime['prepare']>[1],
  remove = false,
): Promise<{ exit: PodExit; stdout: string; stderr: string; run: PodLocation; attachedEarly: boolean }> {
  const prepared = await runtime.prepare('bb', options);
  assert.ok(runtime.store.move(prepared.location, 'run'));
  const run: PodLocation = { uuid: prepared.location.uuid, phase: 'run' };
  const stdout = collectStream();
  const stderr = collectStream();
  const exit = await runForeground(runtime, run, prepared.manifest, prepared.lockFd, {
    stdout,
    stderr,
    remove,
    ...(prepared.network ? { network: prepared.network } : {}),
  });
  return {
    exit,
    stdout: stdout.text(),
    stderr: stderr.text(),
    run,
    attachedEarly: prepared.network !== undefined,
  };
}

after(() => {
  for (const dir of dirs) {
    const runcRoot = join(dir, 'runc');
    if (existsSync(runcRoot)) {
      for (const id of readdirSync(runcRoot))
        spawnSync('runc', ['--root', runcRoot, 'delete', '--force', id]);
    }
    // What a killed holder left on the host (netns, address, cgroups) goes as gc would take it.
    try {
      collectGarbage(new PodRuntime(dir, images), { gracePeriodMs: 0, expirePreparedMs: 0 });
    } catch {
      // A dir a test left half made: removed below all the same.
    }
    for (const point of mountsUnder(dir)) spawnSync('umount', ['-l', point]);
    rmSync(dir, { recursive: true, force: true });
  }
});

describe('run in the foreground', () => {
  it('streams output, records it in the log, and returns the exit code', async () => {
    const runtime = newRuntime();
    const { exit, stdout, stderr, run } = await runToEnd(runtime, {
      args: ['sh', '-c', 'echo out; echo err >&2; exit 7'],
    });
    assert.equal(exit.exit_code, 7);
    assert.equal(stdout, 'out\n');
    assert.match(stderr, /err/);
    const info = runtime.status(run.uuid);
    assert.equal(info.state, 'exited');
    assert.equal(info.exit?.exit_code, 7);
    assert.ok(info.started?.started_at);
    assert.match(readFileSync(join(runtime.store.path(run), 'log'), 'utf8'), /out\n/);
    assert.deepEqual(mountsUnder(runtime.store.path(run)), [], 'no host mount is left under the pod');
  });

  it('runs the app isolated: own pid namespace, hostname, the image user, writes never reach the image', async () => {
    const runtime = newRuntime();
    const { stdout, run } = await runToEnd(
      runtime,
      {
        name: 'iso',
        user: 'nobody',
        args: [
          'sh',
          '-c',
          'echo pid=$$ host=$(hostname) uid=$(id -u); touch /tmp/x 2>/dev/null; echo made > /home/nobody/f 2>/dev/null; true',
        ],
      },
      true,
    );
    assert.match(stdout, /pid=1 host=iso uid=65534/);
    assert.ok(!existsSync(join(images.rootfs, 'tmp/x')), 'the image rootfs was not written');
    assert.throws(() => runtime.status(run.uuid), /Cannot find pod/, '--rm removed the pod');
  });

  it('the default seccomp profile: no user namespace (which needs no capability), everything ordinary still works', async () => {
    const runtime = newRuntime();
    const script = [
      'unshare -U -r id 2>&1 | grep -q "Operation not permitted" && echo userns-refused',
      'echo forked-$(sh -c "echo child")',
      'echo data > /tmp/f && cat /tmp/f',
    ].join('; ');
    const { exit, stdout } = await runToEnd(runtime, { args: ['sh', '-c', script] }, true);
    assert.equal(exit.exit_code, 0);
    assert.equal(stdout, 'userns-refused\nforked-child\ndata\n');
  });

  it('applies the memory limit (the kernel kills the app beyond it) and records the OOM kill', async (t) => {
    const runtime = newRuntime();
    const { exit, stdout, run } = await runToEnd(runtime, {
      memoryBytes: 16 * 1024 * 1024,
      // Holds ~64 MiB in a shell variable: far beyond the 16 MiB limit.
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell expansion, not a JS template
      args: ['sh', '-c', 'x=$(head -c 67108864 /dev/zero | tr "\\0" a); echo survived ${#x}'],
    });
    assert.doesNotMatch(stdout, /survived/);
    assert.equal(exit.exit_code, 137);
    assert.equal(podCgroupExists(run.uuid), false, 'the pod cgroup is removed once read');
    if (!oomDetectable()) {
      t.diagnostic('this machine does not delegate the v2 memory controller: OOM detection not checked');
      return;
    }
    assert.equal(exit.oom_killed, true, 'the kernel OOM kill is recorded, read from the pod cgroup');
    assert.match(exit.reason ?? '', /out of memory/);
    assert.equal(runtime.status(run.uuid).exit?.oom_killed, true, 'and kept in exit.json');
  });

  it('kill -9 of an app is not an OOM kill, even with a memory limit', async () => {
    const runtime = newRuntime();
    // The shell is pid 1 of its namespace, immune to its own SIGKILL: kill a child and exit with its status.
    const uuid = await startDetached(runtime, ['sh', '-c', 'sleep 100 & kill -9 $!; wait $!; exit $?'], {
      memoryBytes: 32 * 1024 * 1024,
    });
    const done = await runtime.waitExit(uuid, 20_000);
    assert.equal(done.exit?.exit_code, 137);
    assert.equal(done.exit?.oom_killed, undefined);
  });
});

describe('detached pods and their lock', () => {
  it('a detached pod runs with only the stage-1 holder left, status --wait blocks on the lock', async () => {
    const runtime = newRuntime();
    const caCerts = process.env.NODE_EXTRA_CA_CERTS;
    process.env.NODE_EXTRA_CA_CERTS = '/nonexistent-ca.pem';
    let uuid: string;
    try {
      uuid = await startDetached(runtime, ['sh', '-c', 'sleep 0.5; exit 3']);
    } finally {
      if (caCerts === undefined) delete process.env.NODE_EXTRA_CA_CERTS;
      else process.env.NODE_EXTRA_CA_CERTS = caCerts;
    }
    const running = runtime.status(uuid);
    assert.equal(running.state, 'running');
    assert.ok(running.pid !== null && running.pid > 0);
    // The holder runs from its bundle (through its code-cache loader), started without
    // NODE_EXTRA_CA_CERTS (it makes no TLS call).
    const holderPid = readFileSync(
      join(runtime.store.path({ uuid, phase: 'run' }), 'holder.pid'),
      'utf8',
    ).trim();
    assert.match(readFileSync(`/proc/${holderPid}/cmdline`, 'utf8'), /bin\/berth-holder\.cjs/);
    assert.doesNotMatch(readFileSync(`/proc/${holderPid}/environ`, 'utf8'), /NODE_EXTRA_CA_CERTS/);
    const done = await runtime.waitExit(uuid);
    assert.equal(done.state, 'exited');
    assert.equal(done.exit?.exit_code, 3);
  });

  it('kill -9 of the container init → exited with 137, recorded before the lock dropped', async () => {
    const runtime = newRuntime();
    const uuid = await startDetached(runtime, ['sleep', '1000']);
    const pid = runtime.status(uuid).pid;
    assert.ok(pid);
    process.kill(pid, 'SIGKILL');
    const done = await runtime.waitExit(uuid);
    assert.equal(done.state, 'exited');
    assert.equal(done.exit?.exit_code, 137);
  });

  it('kill -9 of the stage-1 holder → the watcher kills the app, records why, and the pod reports exited', async () => {
    const runtime = newRuntime();
    const uuid = await startDetached(runtime, ['sleep', '1000']);
    const holderPid = Number(
      readFileSync(join(runtime.store.path({ uuid, phase: 'run' }), 'holder.pid'), 'utf8'),
    );
    process.kill(holderPid, 'SIGKILL');
    const done = await runtime.waitExit(uuid, 20_000);
    assert.equal(done.state, 'exited');
    assert.equal(done.exit?.exit_code, 137);
    assert.match(done.exit?.reason ?? '', /stage-1 holder was killed/);
    assert.deepEqual(mountsUnder(runtime.store.path({ uuid, phase: 'run' })), []);
  });

  it('the container itself holds the lock: with its holder, watcher and runc all killed, the pod still runs; gc then cleans up after all of them', async () => {
    const runtime = newRuntime();
    const uuid = await startDetached(runtime, ['sleep', '1000'], { net: 'private' });
    const appPid = runtime.status(uuid).pid;
    assert.ok(appPid);
    // Everything of berth's and runc's that holds the lock fd, but not the container.
    // The watcher first: once the holder is gone it would kill the app (the test above).
    const watcher = pidsWithCmdline('berth-watcher').filter((pid) => pidsWithCmdline(uuid).includes(pid));
    assert.equal(watcher.length, 1);
    for (const pid of watcher) process.kill(pid, 'SIGKILL');
    const outside = pidsWithCmdline(uuid).filter((pid) => pid !== appPid && !watcher.includes(pid));
    assert.ok(outside.length >= 2, `the holder and runc hold the pod: ${outside.join(', ')}`);
    for (const pid of outside) process.kill(pid, 'SIGKILL');
    await sleep(200);
    assert.equal(runtime.status(uuid).state, 'running', 'the app still holds the lock');
    process.kill(appPid, 'SIGKILL');
    const done = await runtime.waitExit(uuid, 20_000);
    assert.equal(done.state, 'exited');
    // Nobody was left to clean up: runc's state, the netns and the cgroups are still there.
    assert.ok(existsSync(join(runtime.store.dirs.runc, uuid)), "runc's state is left");
    assert.ok(existsSync(netnsPath(uuid)), 'the netns is left');
    assert.ok(podCgroupExists(uuid), 'the cgroup is left');
    const report = collectGarbage(runtime, { gracePeriodMs: 0, expirePreparedMs: 86_400_000 });
    assert.deepEqual(report.deleted, [uuid]);
    assert.ok(!existsSync(join(runtime.store.dirs.runc, uuid)));
    assert.ok(!existsSync(netnsPath(uuid)));
    assert.ok(!podCgroupExists(uuid));
    assert.ok(!existsSync(runtime.store.path({ uuid, phase: 'exited-garbage' })));
  });

  it('the lock fd the container holds reaches its own pod dir and nothing above it, read-only', async () => {
    const runtime = newRuntime();
    writeFileSync(join(runtime.dataDir, 'host-secret'), 'host only\n');
    const script = [
      'ls /proc/self/fd/3/../../..',
      'cat /proc/self/fd/3/../../../host-secret 2>/dev/null || echo no-secret',
      'touch /proc/self/fd/3/planted 2>&1 | grep -q "Read-only" && echo read-only',
    ].join('; ');
    const { stdout, run } = await runToEnd(runtime, { args: ['sh', '-c', script] });
    const lines = stdout.split('\n');
    assert.ok(lines.includes('pod.json'), `"../../.." of the fd is still the pod dir: ${stdout}`);
    assert.ok(!lines.includes('pods'), 'the data dir is out of reach');
    assert.ok(lines.includes('no-secret'), 'a host file above the pod dir cannot be read');
    assert.ok(lines.includes('read-only'), 'nothing can be written through the fd');
    assert.ok(!existsSync(join(runtime.store.path(run), 'planted')));
  });

  it("the root overlay exists only in the container's mount namespace, and a missing workdir is made in it", async () => {
    const runtime = newRuntime();
    const uuid = await startDetached(runtime, ['sh', '-c', 'grep "^overlay / " /proc/mounts; sleep 1000'], {
      workdir: '/made/here',
    });
    const podPath = runtime.store.path({ uuid, phase: 'run' });
    assert.deepEqual(mountsUnder(podPath), [], 'no host mount under the pod dir while it runs');
    assert.ok(existsSync(join(podPath, 'upper/made/here')), 'the workdir went into the upper layer');
    assert.ok(!existsSync(join(images.rootfs, 'made')), 'not into the image');
    await runtime.stop(uuid, 1000);
    assert.match(readLogTail(podPath).text, /^overlay \/ overlay /m);
  });

  it('a shared dir: host-written files the app sees at once, read-only, atomically replaced', async () => {
    const runtime = newRuntime();
    const script = [
      'cat /run/berth/data',
      'while [ "$(cat /run/berth/data)" != v2 ]; do sleep 0.05; done',
      'echo saw-v2',
      '(echo x > /run/berth/data) 2>/dev/null && echo writable || echo read-only',
    ].join('; ');
    const uuid = await startDetached(runtime, ['sh', '-c', script], {
      sharedDir: '/run/berth',
      sharedFiles: { data: 'v1' },
    });
    await sleep(300);
    runtime.writeSharedFile(uuid, 'data', 'v2');
    const done = await runtime.waitExit(uuid, 20_000);
    assert.equal(done.exit?.exit_code, 0);
    const log = readFileSync(join(runtime.logDir(uuid).dir, 'log'), 'utf8');
    assert.match(log, /v1/);
    assert.match(log, /saw-v2/);
    assert.match(log, /read-only/);
    assert.throws(() => runtime.writeSharedFile(uuid, '../escape', 'x'), /Invalid shared file name/);
    const plain = await startDetached(runtime, ['true']);
    assert.throws(() => runtime.writeSharedFile(plain, 'data', 'x'), /has no shared dir/);
    await assert.rejects(
      runtime.prepare('bb', { args: ['true'], sharedDir: 'run/berth' }),
      /expected an absolute path/,
    );
  });

  it('stop sends SIGTERM, then SIGKILL after the timeout', async () => {
    const runtime = newRuntime();
    // busybox sleep as pid 1 ignores SIGTERM (no handler, init): only SIGKILL ends it.
    const uuid = await startDetached(runtime, ['sleep', '1000']);
    const stopped = await runtime.stop(uuid, 300);
    assert.equal(stopped.state, 'exited');
    assert.equal(stopped.exit?.exit_code, 137);
    await assert.rejects(runtime.stop(uuid, 100), /Cannot stop pod .*: current state is exited/);
  });

  it('rm refuses a running pod and removes an exited one', async () => {
    const runtime = newRuntime();
    const uuid = await startDetached(runtime, ['sleep', '1000']);
    await assert.rejects(runtime.remove(uuid), /current state is running; stop it first/);
    await runtime.stop(uuid, 100);
    assert.equal(await runtime.remove(uuid), uuid);
    assert.throws(() => runtime.status(uuid), /Cannot find pod/);
    assert.deepEqual(readdirSync(join(runtime.dataDir, 'runc')), [], "runc's state is gone too");
  });
});

describe('races between real processes', () => {
  it('two run-prepared of one UUID: exactly one runs it, the other says it was already started', async () => {
    const runtime = newRuntime();
    const uuid = await runtime.prepareOnly('bb', { args: ['sh', '-c', 'sleep 0.3; echo ran'] });
    assert.equal(runtime.status(uuid).state, 'prepared');
    const results = await Promise.all([
      runBerth(['run-prepared', '--dir', runtime.dataDir, uuid]),
      runBerth(['run-prepared', '--dir', runtime.dataDir, uuid]),
    ]);
    const winners = results.filter((r) => r.code === 0);
    const losers = results.filter((r) => r.code !== 0);
    assert.equal(winners.length, 1, JSON.stringify(results));
    assert.equal(winners[0]?.stdout, 'ran\n');
    assert.equal(losers.length, 1);
    assert.match(losers[0]?.stderr ?? '', /already started/);
  });

  it('a pod prepared by an older berth (its root overlay not in config.json) still runs', async () => {
    const runtime = newRuntime();
    const uuid = await runtime.prepareOnly('bb', {
      args: ['sh', '-c', 'echo old-config > /made; cat /made'],
    });
    const configPath = join(runtime.store.path({ uuid, phase: 'prepared' }), 'config.json');
    const config = JSON.parse(readFileSync(configPath, 'utf8')) as { mounts: { destination: string }[] };
    config.mounts = config.mounts.filter((m) => m.destination !== '/');
    writeFileSync(configPath, JSON.stringify(config));
    const claimed = runtime.claimPrepared(uuid);
    const stdout = collectStream();
    const exit = await runForeground(runtime, claimed.location, claimed.manifest, claimed.lockFd, {
      stdout,
      stderr: collectStream(),
      remove: false,
    });
    assert.equal(exit.exit_code, 0, exit.reason);
    assert.equal(stdout.text(), 'old-config\n');
    assert.ok(existsSync(join(runtime.store.path(claimed.location), 'upper/made')));
  });

  it('kill -9 during prepare → prepare-failed → the next gc moves it to garbage and deletes it', async () => {
    const runtime = newRuntime();
    // A real process that is "preparing" (holds the lock in prepare/) when it is killed.
    const storeUrl = new URL('./pod-store.js', import.meta.url).href;
    const child = spawn(process.execPath, [
      '-e',
      `import(${JSON.stringify(storeUrl)}).then((m) => { const s = new m.PodStore(${JSON.stringify(runtime.dataDir)}); const p = s.createPreparing(); console.log(p.uuid); setInterval(() => {}, 1000); });`,
    ]);
    const uuid = await new Promise<string>((resolve) =>
      child.stdout.once('data', (c: Buffer) => resolve(c.toString().trim())),
    );
    assert.equal(runtime.status(uuid).state, 'preparing');
    assert.deepEqual(
      collectGarbage(runtime, { gracePeriodMs: 0, expirePreparedMs: 0 }).discarded,
      [],
      'gc leaves a pod that is preparing',
    );
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));
    assert.equal(runtime.status(uuid).state, 'prepare-failed');
    const report = collectGarbage(runtime, { gracePeriodMs: 30 * 60_000, expirePreparedMs: 24 * 3_600_000 });
    assert.deepEqual(report.discarded, [uuid]);
    assert.deepEqual(report.deleted, [uuid]);
    assert.throws(() => runtime.status(uuid), /Cannot find pod/);
  });

  it('two gc at once and gc during status: no error, nothing deleted twice, nothing running deleted', async () => {
    const runtime = newRuntime();
    const running = await startDetached(runtime, ['sleep', '1000']);
    const exited: string[] = [];
    for (let i = 0; i < 6; i++) {
      exited.push(await startDetached(runtime, ['true']));
    }
    for (const uuid of exited) await runtime.waitExit(uuid);
    // Mark only first: the exited pods stay queryable for their grace period.
    const marked = await runBerth(['gc', '--dir', runtime.dataDir, '--mark-only']);
    assert.equal(marked.code, 0, marked.stderr);
    for (const uuid of exited) assert.equal(runtime.status(uuid).state, 'exited-garbage');
    assert.equal(runtime.status(running).state, 'running');

    const statusLoop = (async () => {
      for (let i = 0; i < 20; i++) {
        for (const uuid of exited) {
          try {
            runtime.status(uuid);
          } catch (err) {
            assert.match(String(err), /Cannot find pod/);
          }
        }
        await sleep(5);
      }
    })();
    const [a, b] = await Promise.all([
      runBerth(['gc', '--dir', runtime.dataDir, '--grace-period', '0s']),
      runBerth(['gc', '--dir', runtime.dataDir, '--grace-period', '0s']),
      statusLoop,
    ]);
    assert.equal(a?.code, 0, a?.stderr);
    assert.equal(b?.code, 0, b?.stderr);
    const deleted = [
      ...(a?.stdout ?? '').matchAll(/deleted (\S+)/g),
      ...(b?.stdout ?? '').matchAll(/deleted (\S+)/g),
    ].map((m) => m[1]);
    assert.deepEqual([...deleted].sort(), [...exited].sort(), 'each exited pod deleted exactly once');
    assert.equal(runtime.status(running).state, 'running');
    await runtime.stop(running, 100);
  });

  it('an exited pod stays queryable through its grace period, then gc deletes it', async () => {
    const runtime = newRuntime();
    const uuid = await startDetached(runtime, ['true']);
    await runtime.waitExit(uuid);
    const first = collectGarbage(runtime, { gracePeriodMs: 60_000, expirePreparedMs: 60_000 });
    assert.deepEqual(first.marked, [uuid]);
    assert.deepEqual(first.deleted, []);
    assert.equal(runtime.status(uuid).exit?.exit_code, 0);
    const later = collectGarbage(runtime, {
      gracePeriodMs: 60_000,
      expirePreparedMs: 60_000,
      now: new Date(Date.now() + 61_000),
    });
    assert.deepEqual(later.deleted, [uuid]);
  });

  it('prepared pods expire after --expire-prepared', async () => {
    const runtime = newRuntime();
    const uuid = await runtime.prepareOnly('bb', { args: ['true'] });
    assert.deepEqual(collectGarbage(runtime, { gracePeriodMs: 0, expirePreparedMs: 60_000 }).discarded, []);
    const report = collectGarbage(runtime, {
      gracePeriodMs: 0,
      expirePreparedMs: 60_000,
      now: new Date(Date.now() + 61_000),
    });
    assert.deepEqual(report.discarded, [uuid]);
    assert.deepEqual(report.deleted, [uuid]);
  });
});

describe('bad input', () => {
  it('unknown UUID, bad flags, nothing to run: clear errors and non-zero exits', async () => {
    const runtime = newRuntime();
    const unknown = await runBerth([
      'status',
      '--dir',
      runtime.dataDir,
      '00000000-0000-4000-8000-000000000000',
    ]);
    assert.equal(unknown.code, 3);
    assert.match(unknown.stderr, /Cannot find pod "00000000-0000-4000-8000-000000000000"/);
    const badFlag = await runBerth(['list', '--dir', runtime.dataDir, '--bogus']);
    assert.equal(badFlag.code, 2);
    assert.match(badFlag.stderr, /bogus/);
    const badGrace = await runBerth(['gc', '--dir', runtime.dataDir, '--grace-period', 'soon']);
    assert.equal(badGrace.code, 2);
    assert.match(badGrace.stderr, /--grace-period/);
    const noCmd = await runBerth(['run-prepared', '--dir', runtime.dataDir]);
    assert.equal(noCmd.code, 2);
    assert.match(noCmd.stderr, /expects UUID/);
  });

  it("a pod whose runc fails to start reports exited with runc's reason, not a crash", async () => {
    const runtime = newRuntime();
    const prepared = await runtime.prepare('bb', { args: ['/no/such/binary'] });
    assert.ok(runtime.store.move(prepared.location, 'run'));
    const run = { uuid: prepared.location.uuid, phase: 'run' as const };
    const exit = await runForeground(runtime, run, prepared.manifest, prepared.lockFd, {
      stdout: collectStream(),
      stderr: collectStream(),
      remove: false,
    });
    assert.equal(exit.exit_code, null);
    assert.match(exit.reason ?? '', /no such file|not found|executable/i);
    assert.equal(runtime.status(run.uuid).state, 'exited');
  });
});

describe('networking', () => {
  it('--net private: own address on the berth bridge, a published port reachable on 127.0.0.1, torn down after', async () => {
    const runtime = newRuntime();
    const hostPort = 20000 + Math.floor(Math.random() * 20000);
    const uuid = await startDetached(runtime, ['httpd', '-f', '-p', '8080', '-h', '/etc'], {
      ports: [{ host_port: hostPort, container_port: 8080 }],
    });
    const info = runtime.status(uuid);
    assert.match(info.network?.address ?? '', /^\d+\.\d+\.\d+\.\d+$/);
    let body = '';
    for (let i = 0; i < 50 && body === ''; i++) {
      try {
        body = await (await fetch(`http://127.0.0.1:${hostPort}/hostname`)).text();
      } catch {
        await sleep(100);
      }
    }
    assert.equal(body.trim(), info.manifest?.hostname);
    const hostInterface = info.network?.host_interface;
    assert.match(hostInterface ?? '', /^veth/, 'network.json names the host end of the veth pair');
    assert.ok(existsSync(`/sys/class/net/${hostInterface}`));
    // Reserved in the store of the data dir's slice (pod-ipam.ts), which network.json names.
    const slice = info.network?.slice;
    assert.equal(typeof slice, 'number', 'network.json records the slice');
    const reservation = join(sliceIpamDataDir(slice ?? -1), cniNetworkName, info.network?.address ?? '');
    assert.ok(existsSync(reservation), "the address is reserved in the slice's store");
    await runtime.stop(uuid, 1000);
    assert.ok(!existsSync(`/var/run/netns/berth-${uuid}`), 'the netns is gone');
    assert.ok(!existsSync(reservation), 'the address went back to host-local');
    await assert.rejects(
      fetch(`http://127.0.0.1:${hostPort}/hostname`, { signal: AbortSignal.timeout(2000) }),
    );
    // The kernel removes the veth pair with the netns, in the background: soon, not at once.
    for (let i = 0; i < 100 && existsSync(`/sys/class/net/${hostInterface}`); i++) await sleep(50);
    assert.ok(!existsSync(`/sys/class/net/${hostInterface}`), 'the host end of the veth pair is gone');
  });

  it("--net private NATs through the subnet's one masquerade rule, which gc restores after a flush", async () => {
    const runtime = newRuntime();
    const rule = masqueradeRule(podSubnet());
    const natRules = () => spawnSync('iptables', ['--wait', '-t', 'nat', '-S'], { encoding: 'utf8' }).stdout;
    const ruleExists = () => spawnSync('iptables', ['--wait', '-t', 'nat', '-C', ...rule]).status === 0;
    const uuid = await startDetached(runtime, ['sleep', '30']);
    const network = runtime.status(uuid).network;
    assert.equal(network?.masquerade, 'subnet');
    assert.ok(ruleExists(), 'the subnet rule is in place');
    assert.ok(
      !natRules().includes(`-s ${network?.address}`),
      "no NAT rule of the pod itself (the bridge plugin's per-pod chain)",
    );
    // A firewall reload flushes it; gc puts it back and says so.
    assert.equal(spawnSync('iptables', ['--wait', '-t', 'nat', '-D', ...rule]).status, 0);
    assert.ok(!ruleExists());
    const gc = await runBerth(['gc', '--dir', runtime.dataDir]);
    assert.equal(gc.code, 0, gc.stderr);
    assert.match(gc.stdout, /restored the pod network's firewall rules/);
    assert.ok(ruleExists(), 'gc restored the rule');
    await runtime.stop(uuid, 1000);
  });

  it('pods attached with a NAT chain of their own (older berth) lose it on teardown', async () => {
    const uuid = crypto.randomUUID();
    const attached = attachNetwork(uuid, newRuntime().dataDir, [], 'per-pod');
    const podRule = `-s ${attached.address}/32`;
    assert.ok(
      spawnSync('iptables', ['--wait', '-t', 'nat', '-S'], { encoding: 'utf8' }).stdout.includes(podRule),
      'the bridge plugin made the pod its own NAT rule',
    );
    detachNetwork(uuid, [], 'per-pod', { slice: attached.slice });
    assert.ok(
      !spawnSync('iptables', ['--wait', '-t', 'nat', '-S'], { encoding: 'utf8' }).stdout.includes(podRule),
      'and its teardown removed it',
    );
    assert.ok(!existsSync(`/var/run/netns/berth-${uuid}`), 'the netns is gone');
  });

  it('an attach started while the pod is prepared is undone when the prepare fails, and used when it succeeds', async () => {
    const runtime = newRuntime();
    await assert.rejects(
      runtime.prepare('bb', { args: ['true'], workdir: 'relative', attachNetworkNow: true }),
      {
        message: /workdir/,
      },
    );
    const [failed] = runtime.store.listPhase('prepare');
    assert.ok(failed, 'the failed prepare is left for gc');
    assert.ok(!existsSync(netnsPath(failed)), 'its netns was removed');

    const { exit, stdout, run, attachedEarly } = await runToEnd(runtime, {
      args: ['sh', '-c', 'ip -o -4 addr show eth0 | grep -o "inet [0-9.]*"'],
      attachNetworkNow: true,
    });
    assert.ok(attachedEarly, 'the attach came back with the pod');
    assert.equal(exit.exit_code, 0, exit.reason);
    const address = runtime.status(run.uuid).network?.address;
    assert.equal(stdout.trim(), `inet ${address}`);
    assert.ok(!existsSync(netnsPath(run.uuid)), 'torn down after');
  });

  it('--net none: only loopback; --net host: the host network', async () => {
    const runtime = newRuntime();
    for (const [net, expectEth] of [
      ['none', false],
      ['host', true],
    ] as const) {
      const prepared = await runtime.prepare('bb', { net, args: ['sh', '-c', 'cat /proc/net/dev'] });
      assert.ok(runtime.store.move(prepared.location, 'run'));
      const stdout = collectStream();
      const run = { uuid: prepared.location.uuid, phase: 'run' as const };
      await runForeground(runtime, run, prepared.manifest, prepared.lockFd, {
        stdout,
        stderr: collectStream(),
        remove: true,
      });
      const ifaces = stdout
        .text()
        .split('\n')
        .slice(2)
        .map((l) => l.split(':')[0]?.trim())
        .filter(Boolean);
      assert.ok(ifaces.includes('lo'));
      assert.equal(ifaces.length > 1, expectEth, `${net}: ${ifaces.join(',')}`);
    }
  });
});

describe('the stage-1 holder entry', () => {
  it('is the cached bundle loader when the bundle is at least as new as tsc output, else the ES module', () => {
    const entry = holderEntry();
    assert.match(entry, /bin\/berth-holder\.cjs$/);
    const main = new URL('./stage1-holder-main.js', import.meta.url).pathname;
    const bundle = main.replace('stage1-holder-main.js', 'stage1-holder.bundle.cjs');
    const { atime, mtime } = statSync(bundle);
    const old = new Date(statSync(main).mtimeMs - 60_000);
    utimesSync(bundle, old, old);
    try {
      assert.equal(holderEntry(), main);
    } finally {
      utimesSync(bundle, atime, mtime);
    }
  });
});
