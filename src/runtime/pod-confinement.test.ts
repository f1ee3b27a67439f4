import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { busyboxResolver } from '../testing/busybox-image.js';
import { runPodScript, runPreparedToEnd } from '../testing/pod-script.js';
import { mountsUnder } from './mounts.js';
import { defaultPidsLimit, PodRuntime } from './pod-runtime.js';
import { defaultSeccompProfile } from './seccomp-profile.js';

/**
 * What a pod may not do or take, against real runc: the sockets the seccomp profile refuses and
 * the default pids limit. Pods come from a busybox rootfs below the image-store seam.
 */
const images = busyboxResolver();
const dirs: string[] = [];

function newRuntime(): PodRuntime {
  const dir = mkdtempSync(join(tmpdir(), 'berth-conf-'));
  dirs.push(dir);
  return new PodRuntime(dir, images);
}

after(() => {
  for (const dir of dirs) {
    const runcRoot = join(dir, 'runc');
    if (existsSync(runcRoot)) {
      for (const id of readdirSync(runcRoot))
        spawnSync('runc', ['--root', runcRoot, 'delete', '--force', id]);
    }
    for (const point of mountsUnder(dir)) spawnSync('umount', ['-l', point]);
    rmSync(dir, { recursive: true, force: true });
  }
});

/** Runs a shell script in a new pod (no network unless asked) to its end; stdout and stderr together. */
function runScript(script: string, options: Parameters<PodRuntime['prepare']>[1] = {}) {
  return runPodScript(newRuntime(), script, { net: 'none', ...options });
}

/** The app's pids.max, on cgroup v2 (its own cgroup at the mount) or v1 (the pids hierarchy). */
const readPidsMax = 'cat /sys/fs/cgroup/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids/pids.max';

describe('seccomp: sockets past the pod’s own traffic', () => {
  it('refuses AF_PACKET (arping) and raw IPv4 (traceroute); TCP stays, ICMP datagram sockets are allowed', async () => {
    const { exit, output } = await runScript(
      [
        // Both tools make their socket before anything else can fail (lo has no ARP, but the
        // socket comes first): without the profile's rules, the socket is made.
        'arping -c 1 -w 1 -I lo 127.0.0.1 2>&1 | grep -q "socket: Operation not permitted" && echo packet-refused',
        'traceroute -m 1 -q 1 -w 1 127.0.0.1 2>&1 | grep -q "socket: Operation not permitted" && echo raw-refused',
        'nc -l -p 8080 > /tmp/got & sleep 0.2; echo tcp | nc 127.0.0.1 8080; wait; cat /tmp/got',
        'cat /proc/sys/net/ipv4/ping_group_range',
      ].join('; '),
    );
    assert.equal(exit.exit_code, 0, output);
    assert.equal(output, 'packet-refused\nraw-refused\ntcp\n0\t2147483647\n');
  });
});

describe('seccomp profile', () => {
  it('refuses AF_VSOCK sockets (no busybox tool makes one) and raw sockets by their masked type', () => {
    const socketRules = defaultSeccompProfile().syscalls.filter((r) => r.names.includes('socket'));
    const vsock = socketRules.find((r) => r.args?.[0]?.value === 40);
    assert.deepEqual(vsock?.args, [{ index: 0, value: 40, valueTwo: 0, op: 'SCMP_CMP_EQ' }]);
    assert.equal(vsock?.action, 'SCMP_ACT_ERRNO');
    for (const family of [2, 10]) {
      const raw = socketRules.find((r) => r.args?.[0]?.value === family);
      // SOCK_RAW | SOCK_CLOEXEC is still SOCK_RAW: the low four bits are compared.
      assert.deepEqual(raw?.args?.[1], { index: 1, value: 0xf, valueTwo: 3, op: 'SCMP_CMP_MASKED_EQ' });
    }
  });
});

describe('pids limit', () => {
  it(`is ${defaultPidsLimit} for a pod that sets none, as podman's`, async () => {
    const { output } = await runScript(readPidsMax);
    assert.equal(output.trim(), String(defaultPidsLimit));
  });

  it('takes the pod’s own limit, and null for none at all', async () => {
    assert.equal((await runScript(readPidsMax, { pidsLimit: 64 })).output.trim(), '64');
    assert.equal((await runScript(readPidsMax, { pidsLimit: null })).output.trim(), 'max');
  });
});

describe('the data dir', () => {
  it('is made 0700 (an older berth’s 0755 too), nobody cannot read a pod’s env, a pod running as nobody still works', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'berth-conf-'));
    dirs.push(dir);
    // As an older berth left it: world-readable, with its pods dir.
    mkdirSync(join(dir, 'pods'), { mode: 0o755 });
    chmodSync(dir, 0o755);
    const runtime = new PodRuntime(dir, images);
    const prepared = await runtime.prepare('bb', {
      net: 'none',
      user: 'nobody',
      env: ['API_KEY=top-secret'],
      args: ['sh', '-c', 'id -u; head -1 /etc/passwd; echo $API_KEY'],
    });
    for (const d of [dir, join(dir, 'pods'), join(dir, 'runc')])
      assert.equal(statSync(d).mode & 0o777, 0o700, d);
    const manifest = join(runtime.store.path(prepared.location), 'pod.json');
    const asNobody = spawnSync(
      'setpriv',
      ['--reuid=65534', '--regid=65534', '--clear-groups', '--', 'cat', manifest],
      {
        encoding: 'utf8',
      },
    );
    assert.notEqual(asNobody.status, 0);
    assert.match(asNobody.stderr, /Permission denied/);
    const { exit, output } = await runPreparedToEnd(runtime, prepared);
    assert.equal(exit.exit_code, 0);
    assert.equal(output, '65534\nroot:x:0:0:root:/root:/bin/sh\ntop-secret\n');
  });
});
