import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { runBerth } from '../testing/berth-cli.js';
import { busyboxResolver } from '../testing/busybox-image.js';
import { runPodScriptToEnd } from '../testing/pod-script.js';
import { mountsUnder } from './mounts.js';
import { bridgeName, ensurePodNetworkRules, hostGuardChain, hostGuardJump } from './pod-firewall.js';
import { PodRuntime } from './pod-runtime.js';

/**
 * Issue 17, finding 4: a pod on the bridge reaches no service of the host (the cell's API was
 * reachable at the gateway), while published ports still work, from the host and from other pods.
 * Real runc pods, the real bridge and the host's real iptables.
 */
const images = busyboxResolver();
const dirs: string[] = [];
const servers: Server[] = [];

function newRuntime(): PodRuntime {
  const dir = mkdtempSync(join(tmpdir(), 'berth-guard-'));
  dirs.push(dir);
  return new PodRuntime(dir, images);
}

after(async () => {
  for (const server of servers) server.close();
  for (const dir of dirs) {
    const runcRoot = join(dir, 'runc');
    if (existsSync(runcRoot))
      for (const id of readdirSync(runcRoot))
        spawnSync('runc', ['--root', runcRoot, 'delete', '--force', id]);
    for (const point of mountsUnder(dir)) spawnSync('umount', ['-l', point]);
    rmSync(dir, { recursive: true, force: true });
  }
});

/**
 * An HTTP service of the host on every address, as the cell's API was in the report: IPv4's
 * (0.0.0.0), or both families' (`::`).
 */
async function hostService(host = '0.0.0.0'): Promise<{ port: number; requests: () => number }> {
  let requests = 0;
  const server = createServer((_req, res) => {
    requests++;
    res.end('host service answered\n');
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return { port: (server.address() as AddressInfo).port, requests: () => requests };
}

const iptablesRules = (chain: string) =>
  spawnSync('iptables', ['--wait', '-S', chain], { encoding: 'utf8' }).stdout.trim().split('\n');

describe('the host guard of the pod bridge', () => {
  it("refuses a pod's connection to a host service at the gateway; published ports still answer, from the host and from a pod", async () => {
    const service = await hostService();
    const runtime = newRuntime();
    const publishedPort = 20000 + Math.floor(Math.random() * 20000);
    const prepared = await runtime.prepare('bb', {
      args: ['httpd', '-f', '-p', '8080', '-h', '/etc'],
      ports: [{ host_port: publishedPort, container_port: 8080 }],
    });
    assert.ok(runtime.store.move(prepared.location, 'run'));
    const web = { uuid: prepared.location.uuid, phase: 'run' as const };
    await runtime.startDetached(web, prepared.lockFd);
    const webHostname = runtime.status(web.uuid).manifest?.hostname ?? '';
    let fromHost = '';
    for (let i = 0; i < 50 && fromHost === ''; i++) {
      try {
        fromHost = await (await fetch(`http://127.0.0.1:${publishedPort}/hostname`)).text();
      } catch {
        await sleep(100);
      }
    }
    assert.equal(fromHost.trim(), webHostname, 'the published port answers the host');

    // Pods and the bridge have IPv6 link-local addresses even on an IPv4 subnet: a service on `::`
    // answers there unless the guard covers IPv6 too.
    const service6 = await hostService('::');
    const bridgeLinkLocal = /inet6 (fe80::[0-9a-f:]+)\//.exec(
      spawnSync('ip', ['-6', '-o', 'addr', 'show', 'dev', bridgeName(), 'scope', 'link'], {
        encoding: 'utf8',
      }).stdout,
    )?.[1];
    assert.ok(bridgeLinkLocal, 'the bridge has an IPv6 link-local address');
    const out = await runPodScriptToEnd(
      runtime,
      [
        "gw=$(ip route | awk '/^default/ {print $3}')",
        'echo "gateway $gw"',
        // busybox's nc, not its wget: the static wget crashes in the pods' libc-less rootfs.
        `printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 5 "$gw" ${service.port} || echo "host service refused: $?"`,
        `printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 5 ${bridgeLinkLocal}%eth0 ${service6.port} || echo "IPv6 host service refused: $?"`,
        `printf 'GET /hostname HTTP/1.0\\r\\n\\r\\n' | nc -w 5 "$gw" ${publishedPort} || echo "published port failed: $?"`,
      ].join('\n'),
    );
    assert.match(out, /^gateway \d+\.\d+\.\d+\.\d+$/m);
    assert.doesNotMatch(out, /host service answered/);
    assert.match(out, /host service refused/);
    assert.match(out, /Connection refused/, "the pod's connection was refused, not left to time out");
    assert.match(out, /IPv6 host service refused/);
    assert.equal(service.requests() + service6.requests(), 0, 'the host services never saw the pod');
    assert.match(
      out,
      new RegExp(`^${webHostname}$`, 'm'),
      "another pod's published port answers at the gateway",
    );
    await runtime.stop(web.uuid, 1000);
  });

  it('is one chain per bridge that INPUT jumps to once, however often it is set up, and gc restores it', async () => {
    const bridge = bridgeName();
    ensurePodNetworkRules(true);
    ensurePodNetworkRules(true);
    const chain = iptablesRules(hostGuardChain(bridge));
    assert.equal(chain.filter((r) => r.startsWith('-A ')).length, 3, chain.join('\n'));
    const jump = `-A ${hostGuardJump(bridge).join(' ')}`;
    assert.equal(iptablesRules('INPUT').filter((r) => r === jump).length, 1);
    // A firewall reload drops the jump; gc puts it back and says so.
    assert.equal(spawnSync('iptables', ['--wait', '-D', ...hostGuardJump(bridge)]).status, 0);
    const gc = await runBerth(['gc', '--dir', newRuntime().dataDir]);
    assert.equal(gc.code, 0, gc.stderr);
    assert.match(gc.stdout, /restored the pod network's firewall rules/);
    assert.equal(iptablesRules('INPUT').filter((r) => r === jump).length, 1);
    assert.equal(iptablesRules('INPUT')[1], jump, 'first in INPUT, before any ACCEPT of the host');
  });
});
