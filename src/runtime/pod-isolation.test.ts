import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { runBerth } from '../testing/berth-cli.js';
import { busyboxResolver } from '../testing/busybox-image.js';
import { netnsName } from './cni-network.js';
import { runForeground } from './foreground-run.js';
import { mountsUnder } from './mounts.js';
import { bridgeName } from './pod-firewall.js';
import {
  claimedSlices,
  ensurePodIsolation,
  isolationChain,
  isolationJump,
  podSlice,
  reclaimPodSlices,
  sliceOf,
  slicesDir,
} from './pod-isolation.js';
import { PodRuntime } from './pod-runtime.js';
import type { PodLocation } from './pod-store.js';

/**
 * Issue 17, finding 4: pods of one data dir cannot reach pods of another (IPv4 or IPv6 link-local)
 * unless a port is published or the user asks; pods of one data dir still reach each other. Real
 * runc pods, the real bridge and the host's real iptables.
 */
const images = busyboxResolver();
const dirs: string[] = [];

function newDataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'berth-iso-'));
  dirs.push(dir);
  return dir;
}

const newRuntime = (dataDir = newDataDir()) => new PodRuntime(dataDir, images);

after(() => {
  for (const dir of dirs) {
    const runcRoot = join(dir, 'runc');
    if (existsSync(runcRoot))
      for (const id of readdirSync(runcRoot))
        spawnSync('runc', ['--root', runcRoot, 'delete', '--force', id]);
    for (const point of mountsUnder(dir)) spawnSync('umount', ['-l', point]);
    rmSync(dir, { recursive: true, force: true });
  }
});

/** A detached pod serving its hostname over HTTP on 8080, optionally published on the host. */
async function webPod(runtime: PodRuntime, publishedPort?: number) {
  const prepared = await runtime.prepare('bb', {
    args: ['httpd', '-f', '-p', '8080', '-h', '/etc'],
    ...(publishedPort ? { ports: [{ host_port: publishedPort, container_port: 8080 }] } : {}),
  });
  assert.ok(runtime.store.move(prepared.location, 'run'));
  const web = { uuid: prepared.location.uuid, phase: 'run' as const };
  await runtime.startDetached(web, prepared.lockFd);
  let info = runtime.status(web.uuid);
  for (let i = 0; i < 100 && !info.network?.address; i++) {
    await sleep(50);
    info = runtime.status(web.uuid);
  }
  const address = info.network?.address ?? '';
  assert.match(address, /^\d+\.\d+\.\d+\.\d+$/);
  const linkLocal = /inet6 (fe80::[0-9a-f:]+)\//.exec(
    spawnSync(
      'ip',
      [
        'netns',
        'exec',
        netnsName(web.uuid),
        'ip',
        '-6',
        '-o',
        'addr',
        'show',
        'dev',
        'eth0',
        'scope',
        'link',
      ],
      { encoding: 'utf8' },
    ).stdout,
  )?.[1];
  return {
    uuid: web.uuid,
    hostname: info.manifest?.hostname ?? '',
    address,
    linkLocal,
    slice: info.network?.slice,
  };
}

async function runToEnd(runtime: PodRuntime, script: string): Promise<string> {
  const prepared = await runtime.prepare('bb', { args: ['sh', '-c', script] });
  assert.ok(runtime.store.move(prepared.location, 'run'));
  const run: PodLocation = { uuid: prepared.location.uuid, phase: 'run' };
  const chunks: Buffer[] = [];
  const stdout = new Writable({
    write(chunk: Buffer, _enc, cb) {
      chunks.push(Buffer.from(chunk));
      cb();
    },
  });
  const exit = await runForeground(runtime, run, prepared.manifest, prepared.lockFd, {
    stdout,
    stderr: stdout,
    remove: true,
  });
  const text = Buffer.concat(chunks).toString();
  assert.equal(exit.exit_code, 0, `${exit.reason ?? ''}\n${text}`);
  return text;
}

/** A script line: GET /hostname from `target`, or `label: <nc's exit>` when it fails. */
const get = (target: string, port: number, label: string) =>
  `printf 'GET /hostname HTTP/1.0\\r\\n\\r\\n' | nc -w 3 ${target} ${port} || echo "${label}: $?"`;

const iptablesRules = (family: 'iptables' | 'ip6tables', chain: string) =>
  spawnSync(family, ['--wait', '-S', chain], { encoding: 'utf8' }).stdout.trim().split('\n');

describe('isolation between the pods of different data dirs', () => {
  it("a pod cannot reach another data dir's pod (IPv4 or IPv6 link-local) but reaches its published port; pods of one data dir reach each other", async () => {
    const runtimeA = newRuntime();
    const runtimeB = newRuntime();
    const publishedPort = 20000 + Math.floor(Math.random() * 20000);
    const web = await webPod(runtimeB, publishedPort);
    assert.ok(web.linkLocal, 'the pod has an IPv6 link-local address');
    assert.equal(sliceOf(web.slice ?? 0).index, web.slice);

    const fromA = await runToEnd(
      runtimeA,
      [
        "gw=$(ip route | awk '/^default/ {print $3}')",
        get(web.address, 8080, 'other data dir refused'),
        get(`${web.linkLocal}%eth0`, 8080, 'other data dir IPv6 refused'),
        get('"$gw"', publishedPort, 'published port failed'),
      ].join('\n'),
    );
    assert.match(fromA, /other data dir refused: \d+/);
    assert.match(fromA, /other data dir IPv6 refused: \d+/);
    assert.match(fromA, /Connection refused/, 'refused at once, not left to time out');
    assert.doesNotMatch(fromA, /published port failed/);
    assert.equal(
      fromA.split('\n').filter((line) => line === web.hostname).length,
      1,
      `only the published port answered:\n${fromA}`,
    );

    const fromB = await runToEnd(runtimeB, get(web.address, 8080, 'same data dir failed'));
    assert.doesNotMatch(fromB, /same data dir failed/);
    assert.match(fromB, new RegExp(`^${web.hostname}$`, 'm'), 'a pod of the same data dir answers');
    await runtimeB.stop(web.uuid, 1000);
  });

  it('data dirs that name the same $BERTH_POD_NETWORK share a slice and reach each other', async () => {
    const before = process.env.BERTH_POD_NETWORK;
    process.env.BERTH_POD_NETWORK = `shared-${process.pid}-${Date.now()}`;
    try {
      const runtimeA = newRuntime();
      const runtimeB = newRuntime();
      assert.equal(podSlice(runtimeA.dataDir).index, podSlice(runtimeB.dataDir).index);
      const web = await webPod(runtimeB);
      const fromA = await runToEnd(runtimeA, get(web.address, 8080, 'shared network failed'));
      assert.doesNotMatch(fromA, /shared network failed/);
      assert.match(fromA, new RegExp(`^${web.hostname}$`, 'm'));
      await runtimeB.stop(web.uuid, 1000);
    } finally {
      if (before === undefined) delete process.env.BERTH_POD_NETWORK;
      else process.env.BERTH_POD_NETWORK = before;
    }
  });

  it('an invalid $BERTH_POD_NETWORK is refused, naming it', () => {
    const before = process.env.BERTH_POD_NETWORK;
    process.env.BERTH_POD_NETWORK = '../x';
    try {
      assert.throws(() => podSlice(newDataDir()), /BERTH_POD_NETWORK/);
    } finally {
      if (before === undefined) delete process.env.BERTH_POD_NETWORK;
      else process.env.BERTH_POD_NETWORK = before;
    }
  });

  it('processes racing for slices get distinct ones, each with its rule', async () => {
    ensurePodIsolation();
    const moduleUrl = new URL('./pod-isolation.js', import.meta.url).href;
    const racers = Array.from({ length: 6 }, () => newDataDir());
    const startAt = Date.now() + 1500;
    const script = `const m = await import(${JSON.stringify(moduleUrl)});
while (Date.now() < ${startAt}) {}
process.stdout.write(String(m.podSlice(process.argv[1]).index));`;
    const results = await Promise.all(
      racers.map(
        (dir) =>
          new Promise<string>((resolve, reject) => {
            const child = spawn(process.execPath, ['--input-type=module', '-e', script, dir], {
              stdio: ['ignore', 'pipe', 'inherit'],
            });
            let out = '';
            child.stdout.on('data', (chunk: Buffer) => {
              out += chunk.toString();
            });
            child.on('error', reject);
            child.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`exit ${code}`))));
          }),
      ),
    );
    const indices = results.map(Number);
    assert.equal(new Set(indices).size, racers.length, `distinct slices: ${indices.join(' ')}`);
    const claimed = claimedSlices();
    const chain = iptablesRules('iptables', isolationChain(bridgeName()));
    racers.forEach((dir, i) => {
      const index = indices[i] ?? 0;
      assert.equal(claimed.get(index), `dir ${realpathSync(dir)}`);
      const cidr = sliceOf(index).cidr;
      assert.ok(
        chain.some((rule) => rule.includes(`-s ${cidr} -d ${cidr} -j RETURN`)),
        `rule of ${cidr}`,
      );
    });
  });

  it('reclaims the slice of a data dir that is gone, and its rule; gc restores the rules after a flush', async () => {
    const dir = newDataDir();
    const { index, cidr } = podSlice(dir);
    assert.equal(readFileSync(join(slicesDir(), String(index)), 'utf8').trim(), `dir ${realpathSync(dir)}`);
    rmSync(dir, { recursive: true });
    assert.ok(reclaimPodSlices() >= 1);
    assert.ok(!claimedSlices().has(index), 'the slice is free again');
    const rules = iptablesRules('iptables', isolationChain(bridgeName()));
    assert.ok(!rules.some((rule) => rule.includes(`-s ${cidr} -d ${cidr}`)), 'its rule went with it');

    // A firewall reload drops the jumps; gc puts them back, first in FORWARD, and says so.
    ensurePodIsolation();
    const bridge = bridgeName();
    for (const family of ['iptables', 'ip6tables'] as const)
      assert.equal(spawnSync(family, ['--wait', '-D', ...isolationJump(bridge)]).status, 0);
    const gc = await runBerth(['gc', '--dir', newDataDir()]);
    assert.equal(gc.code, 0, gc.stderr);
    assert.match(gc.stdout, /restored the pod network's isolation/);
    const jump = `-A ${isolationJump(bridge).join(' ')}`;
    for (const family of ['iptables', 'ip6tables'] as const) {
      const forward = iptablesRules(family, 'FORWARD');
      assert.equal(forward.filter((rule) => rule === jump).length, 1);
      assert.equal(forward[1], jump);
    }
  });

  it('when every slice is taken, frees those of data dirs that are gone, then those with no pod on the network, then refuses', async () => {
    // A subnet of 4 slices (3 to hand out), on a bridge and run dir of the test's own, so the
    // host's slices are untouched. In a process of its own: the run dir is read at load.
    const work = newDataDir();
    const bridge = `biso${process.pid % 100000}`;
    const env = {
      ...process.env,
      BERTH_NET_RUN_DIR: join(work, 'run'),
      BERTH_SUBNET: '10.214.0.0/26',
      BERTH_BRIDGE: bridge,
      BERTH_CNI_IPAM_DIR: join(work, 'ipam'),
    };
    mkdirSync(env.BERTH_CNI_IPAM_DIR);
    const owners = Array.from({ length: 7 }, (_, i) => {
      const dir = join(work, `d${i + 1}`);
      mkdirSync(dir);
      return dir;
    });
    const inUse = (address: string) => writeFileSync(join(env.BERTH_CNI_IPAM_DIR, address), 'x');
    const moduleUrl = new URL('./pod-isolation.js', import.meta.url).href;
    const script = `const m = await import(${JSON.stringify(moduleUrl)});
const d = JSON.parse(process.argv[1]);
const slice = (dir) => { try { return m.podSlice(dir).index } catch (err) { return err.message } };
const out = [slice(d[0]), slice(d[1]), slice(d[2])];
process.stdout.write(JSON.stringify(out));`;
    const step = (script: string) => {
      const result = spawnSync(
        process.execPath,
        ['--input-type=module', '-e', script, JSON.stringify(owners)],
        {
          env,
          encoding: 'utf8',
        },
      );
      assert.equal(result.status, 0, result.stderr);
      return JSON.parse(result.stdout) as unknown[];
    };
    const call = (indices: number[]) =>
      step(`const m = await import(${JSON.stringify(moduleUrl)});
const d = JSON.parse(process.argv[1]);
process.stdout.write(JSON.stringify(${JSON.stringify(indices)}.map((i) => { try { return m.podSlice(d[i]).index } catch (err) { return err.message } })));`);
    try {
      assert.deepEqual(step(script), [1, 2, 3]);
      inUse('10.214.0.17'); // a pod of d1 on the network, in slice 1 (10.214.0.16/28)
      rmSync(owners[2] ?? '', { recursive: true });
      assert.deepEqual(call([3]), [3], 'the slice of d3, gone, goes to d4');
      assert.deepEqual(call([4]), [2], 'd2 and d4 have no pod on the network: their slices are freed');
      assert.deepEqual(call([0]), [1], 'd1 kept its slice: a pod uses it');
      inUse('10.214.0.33'); // d5's pod, in slice 2
      assert.deepEqual(call([5]), [3]);
      inUse('10.214.0.49'); // d6's pod, in slice 3
      const [refused] = call([6]);
      assert.match(String(refused), /every slice of the pod subnet 10\.214\.0\.0\/26 \(3\)/);
      const chain = iptablesRules('iptables', isolationChain(bridge));
      for (const cidr of ['10.214.0.16/28', '10.214.0.32/28', '10.214.0.48/28'])
        assert.ok(
          chain.some((rule) => rule.includes(`-s ${cidr} -d ${cidr} -j RETURN`)),
          chain.join('\n'),
        );
    } finally {
      for (const family of ['iptables', 'ip6tables']) {
        spawnSync(family, ['--wait', '-F', isolationChain(bridge)]);
        spawnSync(family, ['--wait', '-X', isolationChain(bridge)]);
      }
    }
  });
});
