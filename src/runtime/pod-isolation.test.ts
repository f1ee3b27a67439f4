import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import {
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { connect, isIPv4 } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { runBerth } from '../testing/berth-cli.js';
import { busyboxResolver } from '../testing/busybox-image.js';
import { attachNetwork, detachNetwork, netnsName, netnsPath } from './cni-network.js';
import { runForeground } from './foreground-run.js';
import { mountsUnder } from './mounts.js';
import { bridgeName } from './pod-firewall.js';
import { collectGarbage } from './pod-gc.js';
import { cniNetworkName, ipv4Number, ipv4Text, legacyIpamStore, sliceIpamDataDir } from './pod-ipam.js';
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
import { hasNeighbour } from './pod-neighbour.js';
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

/** Networks a test attaches without a pod: detached after all, also when the test failed midway. */
const bareNetworks: string[] = [];

function attachBare(uuid: string, dataDir: string | undefined) {
  bareNetworks.push(uuid);
  return attachNetwork(uuid, dataDir, []);
}

after(() => {
  for (const uuid of bareNetworks) detachNetwork(uuid, [], 'subnet', 'unrecorded');
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
    const owner = `dir ${realpathSync(dir)}`;
    assert.equal(readFileSync(join(slicesDir(), String(index)), 'utf8').trim(), owner);
    rmSync(dir, { recursive: true });
    // Slices are the host's, and the test files running beside this one take and free them too:
    // a `berth gc` of theirs may reclaim this slice first, and a data dir of theirs may claim it
    // again at once. So the outcome is checked, not the count: the slice is no longer the gone
    // dir's, and while nobody holds it, its rule is gone (read between two looks at the owner).
    reclaimPodSlices();
    assert.notEqual(claimedSlices().get(index), owner, 'the slice is no longer the gone data dir’s');
    const rules = iptablesRules('iptables', isolationChain(bridgeName()));
    if (!claimedSlices().has(index))
      assert.ok(!rules.some((rule) => rule.includes(`-s ${cidr} -d ${cidr}`)), 'its rule went with it');

    // A firewall reload drops the jumps; gc puts them back, first in FORWARD, and says so. The
    // jumps are the host's: a pod started by a test file running beside this one may put them
    // back between the flush and the gc, and then this gc rightly has nothing to restore. So the
    // flush and gc are tried up to three times; a gc that never restores them fails every time.
    ensurePodIsolation();
    const bridge = bridgeName();
    const outputs: string[] = [];
    for (let attempt = 0; attempt < 3; attempt++) {
      for (const family of ['iptables', 'ip6tables'] as const)
        spawnSync(family, ['--wait', '-D', ...isolationJump(bridge)]);
      const gc = await runBerth(['gc', '--dir', newDataDir()]);
      assert.equal(gc.code, 0, gc.stderr);
      outputs.push(gc.stdout);
      if (/restored the pod network's firewall rules/.test(gc.stdout)) break;
    }
    assert.match(outputs.at(-1) ?? '', /restored the pod network's firewall rules/, outputs.join('\n---\n'));
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
    const owners = Array.from({ length: 7 }, (_, i) => {
      const dir = join(work, `d${i + 1}`);
      mkdirSync(dir);
      return dir;
    });
    // A reservation as host-local writes it, in the store of the address's slice (pod-ipam.ts).
    const inUse = (address: string, slice: number) => {
      const store = join(
        env.BERTH_CNI_IPAM_DIR,
        'berth-slices',
        `${bridge}-10.214.0.0_26`,
        String(slice),
        'berth',
      );
      mkdirSync(store, { recursive: true });
      writeFileSync(join(store, address), 'x');
    };
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
      inUse('10.214.0.17', 1); // a pod of d1 on the network, in slice 1 (10.214.0.16/28)
      rmSync(owners[2] ?? '', { recursive: true });
      assert.deepEqual(call([3]), [3], 'the slice of d3, gone, goes to d4');
      assert.deepEqual(call([4]), [2], 'd2 and d4 have no pod on the network: their slices are freed');
      assert.deepEqual(call([0]), [1], 'd1 kept its slice: a pod uses it');
      inUse('10.214.0.33', 2); // d5's pod, in slice 2
      assert.deepEqual(call([5]), [3]);
      inUse('10.214.0.49', 3); // d6's pod, in slice 3
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

/** GET /hostname from the host over a fresh connection (no pooled socket to an earlier pod). */
function hostGet(address: string, port: number, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: address, port, timeout: timeoutMs });
    let body = '';
    socket.setEncoding('utf8');
    socket.on('connect', () => socket.end('GET /hostname HTTP/1.0\r\n\r\n'));
    socket.on('data', (chunk: string) => {
      body += chunk;
    });
    socket.on('timeout', () =>
      socket.destroy(new Error(`no answer from ${address}:${port} in ${timeoutMs} ms`)),
    );
    socket.on('error', reject);
    socket.on('close', () => resolve(body.split('\r\n\r\n')[1]?.trim() ?? ''));
  });
}

const reservationPath = (slice: number | undefined, address: string) =>
  join(slice === undefined ? legacyIpamStore() : join(sliceIpamDataDir(slice), cniNetworkName), address);

/** In the cyclic order of a slice's range, `next` comes after `previous` (round-robin). */
function comesAfter(previous: string, next: string, slice: number): boolean {
  const { rangeStart, rangeEnd } = sliceOf(slice);
  const [start, end] = [ipv4Number(rangeStart), ipv4Number(rangeEnd)];
  const size = end - start + 1;
  const step = (ipv4Number(next) - ipv4Number(previous) + size) % size;
  return step > 0;
}

describe('the addresses of a slice', () => {
  it("a data dir's pods get its slice's addresses round-robin, never the one just freed, while another data dir's pods come and go", async () => {
    const runtimeA = newRuntime();
    const runtimeB = newRuntime();
    const address = async (runtime: PodRuntime) =>
      /inet ([0-9.]+)/.exec(await runToEnd(runtime, 'ip -o -4 addr show eth0'))?.[1] ?? '';
    const seen = { a: [] as string[], b: [] as string[] };
    for (let i = 0; i < 4; i++) {
      seen.a.push(await address(runtimeA));
      seen.b.push(await address(runtimeB));
    }
    for (const [runtime, addresses] of [
      [runtimeA, seen.a],
      [runtimeB, seen.b],
    ] as const) {
      const slice = podSlice(runtime.dataDir);
      const label = `${slice.cidr}: ${addresses.join(' ')}`;
      assert.equal(new Set(addresses).size, addresses.length, `each pod a new address: ${label}`);
      addresses.forEach((next, i) => {
        assert.ok(isIPv4(next), label);
        assert.equal(
          Math.floor(ipv4Number(next) / 256),
          Math.floor(ipv4Number(slice.rangeStart) / 256),
          label,
        );
        const previous = addresses[i - 1];
        if (previous !== undefined)
          assert.ok(comesAfter(previous, next, slice.index), `round-robin order: ${label}`);
      });
    }
  });

  it('a pod given an address just freed answers the host at once: the stale neighbour entry is gone', async () => {
    const runtime = newRuntime();
    // Another port on the bridge: a bridge whose last port goes loses its carrier, and the kernel
    // then drops its neighbour entries (a cell's bridge has its other pods).
    const keeper = crypto.randomUUID();
    attachBare(keeper, runtime.dataDir);
    const first = await webPod(runtime);
    const slice = first.slice ?? -1;
    assert.ok(existsSync(reservationPath(slice, first.address)), "reserved in its slice's own store");
    assert.equal(await hostGet(first.address, 8080, 3000), first.hostname);
    await runtime.stop(first.uuid, 1000);
    assert.ok(!existsSync(reservationPath(slice, first.address)), 'released in that store');
    assert.ok(
      hasNeighbour(first.address, bridgeName()),
      "the host still has the old pod's MAC for the address (what made this test)",
    );
    // host-local starts after its last-reserved address: make it hand out the one just freed.
    const before = ipv4Text(ipv4Number(first.address) - 1);
    writeFileSync(join(sliceIpamDataDir(slice), cniNetworkName, 'last_reserved_ip.0'), before);
    const second = await webPod(runtime);
    assert.equal(second.address, first.address, 'the same address, just freed');
    assert.notEqual(second.hostname, first.hostname);
    // Within one connect timeout, not after the host's 15–45 s of trusting the old MAC.
    assert.equal(await hostGet(second.address, 8080, 3000), second.hostname);
    await runtime.stop(second.uuid, 1000);
  });

  it('pods attached before slices (no slice recorded) are torn down from the old store, by detach and by gc', async () => {
    // detach: an attach as the berth before slices made it, then teardown with nothing recorded.
    const uuid = crypto.randomUUID();
    const legacy = attachBare(uuid, undefined);
    assert.equal(legacy.slice, undefined);
    assert.ok(existsSync(reservationPath(undefined, legacy.address)), 'reserved in the old store');
    // Until it stops it talks to pods in slices as before the upgrade (the chain, reloaded, says so).
    const webRuntime = newRuntime();
    const web = await webPod(webRuntime);
    ensurePodIsolation(true);
    const fromLegacy = spawnSync(
      'ip',
      ['netns', 'exec', netnsName(uuid), 'busybox', 'sh', '-c', get(web.address, 8080, 'legacy refused')],
      { encoding: 'utf8' },
    ).stdout;
    assert.match(fromLegacy, new RegExp(`^${web.hostname}$`, 'm'), fromLegacy);
    detachNetwork(uuid, [], 'subnet', 'unrecorded');
    assert.ok(!existsSync(reservationPath(undefined, legacy.address)), 'released');
    assert.ok(!existsSync(netnsPath(uuid)));
    ensurePodIsolation(true);
    const chain = iptablesRules('iptables', isolationChain(bridgeName())).join('\n');
    assert.ok(!chain.includes(`${legacy.address}/32`), `its rule went at the next load:\n${chain}`);
    await webRuntime.stop(web.uuid, 1000);

    // gc: a failed prepare whose network.json is the old berth's (no slice).
    const runtime = newRuntime();
    const prepared = await runtime.prepare('bb', { args: ['true'] });
    const old = attachBare(prepared.location.uuid, undefined);
    const network = { address: old.address, ports: [], masquerade: 'subnet' };
    writeFileSync(
      join(runtime.store.path(prepared.location), 'network.json'),
      `${JSON.stringify(network)}\n`,
    );
    closeSync(prepared.lockFd); // unlocked in prepare/: prepare-failed, for gc
    const report = collectGarbage(runtime, { gracePeriodMs: 0, expirePreparedMs: 0 });
    assert.deepEqual(report.deleted, [prepared.location.uuid]);
    assert.ok(!existsSync(reservationPath(undefined, old.address)), 'gc released it in the old store');
    assert.ok(!existsSync(netnsPath(prepared.location.uuid)));

    // A holder that died before writing network.json: the slice is found from the reservation.
    const lost = crypto.randomUUID();
    const attached = attachBare(lost, runtime.dataDir);
    assert.ok(existsSync(reservationPath(attached.slice, attached.address)));
    detachNetwork(lost, [], 'subnet', 'unrecorded');
    assert.ok(!existsSync(reservationPath(attached.slice, attached.address)), 'released in its slice');
  });

  it('a slice holding an address of a pod attached before slices is not handed out', () => {
    const work = newDataDir();
    const env = {
      ...process.env,
      BERTH_NET_RUN_DIR: join(work, 'run'),
      BERTH_SUBNET: '10.215.0.0/26',
      BERTH_BRIDGE: `bisl${process.pid % 100000}`,
      BERTH_CNI_IPAM_DIR: join(work, 'ipam'),
    };
    const store = join(env.BERTH_CNI_IPAM_DIR, 'networks', cniNetworkName);
    mkdirSync(store, { recursive: true });
    writeFileSync(join(store, '10.215.0.18'), 'x'); // in slice 1, 10.215.0.16/28
    const owner = join(work, 'd1');
    mkdirSync(owner);
    const moduleUrl = new URL('./pod-isolation.js', import.meta.url).href;
    const result = spawnSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `const m = await import(${JSON.stringify(moduleUrl)}); process.stdout.write(String(m.podSlice(process.argv[1]).index));`,
        owner,
      ],
      { env, encoding: 'utf8' },
    );
    try {
      assert.equal(result.status, 0, result.stderr);
      assert.equal(result.stdout, '2');
    } finally {
      for (const family of ['iptables', 'ip6tables']) {
        spawnSync(family, ['--wait', '-F', isolationChain(env.BERTH_BRIDGE)]);
        spawnSync(family, ['--wait', '-X', isolationChain(env.BERTH_BRIDGE)]);
      }
    }
  });
});
