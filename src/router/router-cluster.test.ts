import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { request } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { BbsClient } from '../bbs/index.js';
import { spawnBerth } from '../testing/berth-cli.js';
import { firstLine, TestCluster, waitFor } from '../testing/cluster-harness.js';
import type { RoutePool } from './route-table.js';

/**
 * Issue 22's router "must show", end to end: one `berth server`, three `berth cell` processes with
 * real runc containers, and a `berth router` process following the server's BBS events.
 */
const cluster = new TestCluster('berth-router-');
const host = 'web.test.berth.localhost';
let bbs: BbsClient;
let routerPort = 0;

interface Answer {
  readonly status: number;
  readonly text: string;
}

function get(path = '/', hostHeader = host): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port: routerPort, path, headers: { host: hostHeader } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          text += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

async function routes(): Promise<RoutePool[]> {
  return (JSON.parse((await get('/routes', `127.0.0.1:${routerPort}`)).text) as { routes: RoutePool[] })
    .routes;
}

before(async () => {
  const serverUrl = await cluster.startServer('server', '1s', ['--no-router']);
  bbs = new BbsClient(serverUrl);
  await bbs.upsertDomain({ domain: 'tests', ttl_ms: 0 });
  await Promise.all([
    cluster.startCell('r1', 'z1', 63000, serverUrl),
    cluster.startCell('r2', 'z2', 63100, serverUrl),
    cluster.startCell('r3', 'z3', 63200, serverUrl),
  ]);
  const router = spawnBerth(['router', '--bbs', serverUrl, '--listen', '127.0.0.1:0']);
  cluster.processes.push(router);
  routerPort = Number(new URL(await firstLine(router)).port);
  await waitFor('three cells', async () => ((await bbs.listCells()).length === 3 ? true : undefined));
});

after(() => cluster.cleanup());

describe('the router in front of an LRP on three cells', { timeout: 600_000 }, () => {
  it('3 instances behind web.test.berth.localhost: 300 requests spread across all 3', async () => {
    await bbs.desireLRP({
      process_guid: 'web',
      domain: 'tests',
      instances: 3,
      image: 'bb:1',
      command: [
        '/bin/sh',
        '-c',
        'mkdir -p /www && echo "instance $INSTANCE_INDEX" > /www/index.html && exec /bin/busybox httpd -f -p 8080 -h /www',
      ],
      env: {},
      memory_mb: 16,
      disk_mb: 16,
      ports: [8080],
      routes: [{ hostname: host, port: 8080 }],
      annotation: '',
      monitor: { tcp: 8080 },
      start_timeout_s: 60,
      placement_tags: [],
    });
    await waitFor(
      'three instances in the route table',
      async () => ((await routes())[0]?.endpoints.length === 3 ? true : undefined),
      120_000,
    );
    const seen = new Map<string, number>();
    for (let i = 0; i < 300; i++) {
      const answer = await get();
      assert.equal(answer.status, 200, answer.text);
      seen.set(answer.text.trim(), (seen.get(answer.text.trim()) ?? 0) + 1);
    }
    assert.deepEqual([...seen.keys()].sort(), ['instance 0', 'instance 1', 'instance 2']);
    for (const count of seen.values()) assert.ok(count >= 50, `uneven spread: ${[...seen.entries()]}`);
  });

  it("kill one instance's container: no failed GET (the retry takes another), and it leaves the table", async () => {
    const [victim] = (await bbs.listActualLRPs({ process_guid: 'web' })).filter((a) => a.state === 'RUNNING');
    assert.ok(victim);
    const failures: string[] = [];
    let sent = 0;
    let loading = true;
    const load = (async () => {
      while (loading) {
        const answer = await get().catch((err: Error) => ({ status: 0, text: err.message }));
        sent += 1;
        if (answer.status !== 200) failures.push(`${answer.status} ${answer.text}`);
      }
    })();
    await new Promise((resolve) => setTimeout(resolve, 300));
    const runcRoot = join(cluster.root, victim.cell_id, 'runc');
    for (const id of cluster.runcContainers(victim.cell_id))
      spawnSync('runc', ['--root', runcRoot, 'kill', id, 'KILL']);
    const gone = await waitFor(
      'the killed instance out of the route table',
      async () => {
        const endpoints = (await routes())[0]?.endpoints ?? [];
        return endpoints.every((e) => !e.id.startsWith(`${victim.instance_guid}:`)) ? Date.now() : undefined;
      },
      30_000,
    );
    // Keep the load on a little after it left: the pool of two serves everything.
    while (Date.now() - gone < 1000) await new Promise((resolve) => setTimeout(resolve, 50));
    loading = false;
    await load;
    assert.deepEqual(failures, [], `${failures.length} of ${sent} requests failed`);
    // Sequential GETs on a shared, busy machine: a few dozen over the kill and after it.
    assert.ok(sent >= 10, `only ${sent} requests sent`);
  });

  it('scale to 0: 503 naming the route; an unknown host: 404', async () => {
    const current = await bbs.getDesiredLRP({ process_guid: 'web' });
    await bbs.updateDesiredLRP({
      process_guid: 'web',
      expected: current.modification_tag,
      update: { instances: 0 },
    });
    const answer = await waitFor(
      'a 503',
      async () => {
        const a = await get();
        return a.status === 503 ? a : undefined;
      },
      30_000,
    );
    assert.match(answer.text, /no running instance of route "web\.test\.berth\.localhost"/);
    const unknown = await get('/', 'nope.test.berth.localhost');
    assert.equal(unknown.status, 404);
  });
});
