import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type ActualLRP, BbsClient } from '../bbs/index.js';
import type { SystemStatusJson } from '../model/index.js';
import { runBerth } from '../testing/berth-cli.js';
import { TestCluster, waitFor } from '../testing/cluster-harness.js';

/**
 * Issue 8's "must show" on real cells: a server and three cell processes, a 3-service system with a
 * relation and a sidecar, real runc containers. Each container serves its own root over HTTP
 * (busybox httpd -h /), so the test reads the relations file and env exactly as the container
 * sees them.
 */
const cluster = new TestCluster('berth-system-cluster-');
let serverUrl = '';
let bbs: BbsClient;

function definition(dbInstances: number): string {
  return `system: rel
services:
  /web:
    image: bb:1
    command: ["/bin/busybox", "sh", "-c", "env > /tmp/env; exec /bin/busybox httpd -f -p 8080 -h /"]
    instances: 2
    ports: [8080]
    monitor: {tcp: 8080}
    memory_mb: 16
    relations: ["/db"]
  /db:
    image: bb:1
    command: ["/bin/busybox", "sh", "-c", "env > /tmp/env; exec /bin/busybox httpd -f -p 5432 -h /"]
    instances: ${dbInstances}
    ports: [5432]
    monitor: {tcp: 5432}
    memory_mb: 16
  /shipper:
    image: bb:1
    command: ["/bin/busybox", "httpd", "-f", "-p", "9000", "-h", "/"]
    ports: [9000]
    memory_mb: 16
    subordinate_to: /web
`;
}

async function deploy(dbInstances: number): Promise<void> {
  const file = join(cluster.root, `rel-${dbInstances}.yaml`);
  writeFileSync(file, definition(dbInstances));
  const r = await runBerth(['deploy', file, '--wait', '--server', serverUrl]);
  assert.equal(r.code, 0, `deploy failed: ${r.stdout} ${r.stderr}`);
}

async function status(): Promise<SystemStatusJson> {
  const res = await fetch(`${serverUrl}/v1/systems/rel`);
  if (!res.ok) throw new Error(`status ${res.status}`);
  return (await res.json()) as SystemStatusJson;
}

/** What a container's own httpd serves from its root: the file as the container sees it. */
async function inContainer(a: ActualLRP, containerPort: number, path: string): Promise<string> {
  const port = a.ports.find((p) => p.container_port === containerPort)?.host_port;
  assert.ok(port, `${a.process_guid}#${a.index} publishes ${containerPort}`);
  const res = await fetch(`http://${a.address}:${port}${path}`);
  if (!res.ok) throw new Error(`GET ${path} from ${a.process_guid}#${a.index}: ${res.status}`);
  return res.text();
}

interface RelationsFile {
  unit: string;
  relations: {
    service: string;
    scope: string;
    peers: { unit: string; address: string; ports: Record<string, number> }[];
  }[];
}

async function relationsOf(a: ActualLRP, containerPort: number): Promise<RelationsFile> {
  return JSON.parse(await inContainer(a, containerPort, '/run/berth/relations.json')) as RelationsFile;
}

function liveCells(): string[] {
  return [...cluster.cells]
    .filter(([, child]) => child.exitCode === null && child.signalCode === null)
    .map(([id]) => id);
}

async function runningOf(prefix: string): Promise<ActualLRP[]> {
  return (await bbs.listActualLRPs({ domain: 'system-rel' })).filter(
    (a) => a.process_guid.startsWith(prefix) && a.state === 'RUNNING' && !a.evacuating,
  );
}

before(async () => {
  serverUrl = await cluster.startServer('server', '1s');
  bbs = new BbsClient(serverUrl);
  await Promise.all([
    cluster.startCell('c1', 'z1', 63000, serverUrl),
    cluster.startCell('c2', 'z2', 63100, serverUrl),
    cluster.startCell('c3', 'z3', 63200, serverUrl),
  ]);
  await waitFor('three cells', async () => ((await bbs.listCells()).length === 3 ? true : undefined));
  // Each cell runs the unit and machine agents for its units, and its presence says so.
  assert.ok((await bbs.listCells()).every((c) => c.model_agent === true));
});

after(() => cluster.cleanup());

describe('a system with a relation and a sidecar on three cells', { timeout: 600_000 }, () => {
  it('deploys to stable: every sidecar unit runs on its principal’s cell', async () => {
    await deploy(1);
    const s = await waitFor(
      'stable with two running sidecars',
      async () => {
        const st = await status();
        const shipper = st.services.find((x) => x.path === '/shipper');
        const ok =
          st.state === 'stable' &&
          shipper?.units.length === 2 &&
          shipper.units.every((u) => u.state === 'RUNNING');
        return ok ? st : undefined;
      },
      180_000,
    );
    const web = s.services.find((x) => x.path === '/web')!;
    const shipper = s.services.find((x) => x.path === '/shipper')!;
    const cellOf = new Map(web.units.map((u) => [u.name, u.cell_id]));
    for (const u of shipper.units) {
      assert.ok(u.principal, 'a sidecar unit names its principal');
      assert.equal(u.cell_id, cellOf.get(u.principal), `${u.name} is on its principal's cell`);
    }
    // And where the containers really run: the sidecar LRP's instance is on the principal's cell.
    const webRunning = await runningOf('rel.web.');
    const sidecars = (await runningOf('rel.shipper.')).filter((a) => /\.u\d+$/.test(a.process_guid));
    assert.equal(sidecars.length, 2);
    for (const sc of sidecars) {
      const index = Number(sc.process_guid.split('.u').at(-1));
      const principal = webRunning.find((a) => a.index === index);
      assert.equal(sc.cell_id, principal?.cell_id, `${sc.process_guid} runs beside web#${index}`);
    }
    const used = new Set([...webRunning, ...(await runningOf('rel.db.'))].map((a) => a.cell_id));
    assert.ok(used.size >= 2, `instances spread over cells: ${[...used].join(',')}`);
    const rel = s.relations.find((r) => r.kind === 'global');
    assert.deepEqual([...(rel?.endpoints ?? [])].sort(), ['/db', '/web']);
  });

  it('related units see each other’s addresses in /run/berth/relations.json and env; peers join and depart', async () => {
    const [db0] = await runningOf('rel.db.');
    assert.ok(db0);
    const dbPort = db0.ports.find((p) => p.container_port === 5432)?.host_port;
    for (const web of await runningOf('rel.web.')) {
      // Units enter scope as the system agent sees them placed: eventually, not at once.
      let last: RelationsFile | undefined;
      const file = await waitFor(
        'web sees db#0 and its own sidecar',
        async () => {
          const f = await relationsOf(web, 8080);
          last = f;
          const count = (service: string) => f.relations.find((r) => r.service === service)?.peers.length;
          return count('/db') === 1 && count('/shipper') === 1 ? f : undefined;
        },
        30_000,
      ).catch((err: unknown) => {
        throw new Error(`${String(err)}; last file: ${JSON.stringify(last)}`);
      });
      assert.equal(file.unit, `/web#${web.index}`);
      const peer = file.relations.find((r) => r.service === '/db')!.peers[0]!;
      assert.deepEqual(peer, { unit: '/db#0', address: db0.address, ports: { '5432': dbPort } });
      // The address works: db's own httpd answers there.
      const res = await fetch(`http://${peer.address}:${peer.ports['5432']}/run/berth/relations.json`);
      assert.equal(res.status, 200);
      // The sidecar relation: the principal sees its own sidecar only.
      const sidecars = file.relations.find((r) => r.service === '/shipper');
      assert.deepEqual(
        sidecars?.peers.map((p) => p.unit),
        [`/shipper#${web.index}`],
      );
    }
    // The db side sees both web units.
    const dbFile = await waitFor('db sees both web units', async () => {
      const f = await relationsOf(db0, 5432);
      return f.relations.find((r) => r.service === '/web')?.peers.length === 2 ? f : undefined;
    });
    assert.deepEqual(
      dbFile.relations
        .find((r) => r.service === '/web')
        ?.peers.map((p) => p.unit)
        .sort(),
      ['/web#0', '/web#1'],
    );
    // A sidecar sees its principal.
    const [sc] = (await runningOf('rel.shipper.')).filter((a) => /\.u\d+$/.test(a.process_guid));
    assert.ok(sc);
    const index = Number(sc.process_guid.split('.u').at(-1));
    // Like every unit, the sidecar sees its principal enter scope eventually: its own agent writes
    // the file on its next look, which may come after the principal's side has been written.
    let lastSc: RelationsFile | undefined;
    const scFile = await waitFor('the sidecar sees its principal', async () => {
      const f = await relationsOf(sc, 9000);
      lastSc = f;
      return f.relations.find((r) => r.service === '/web')?.peers.length ? f : undefined;
    }).catch((err: unknown) => {
      throw new Error(`${String(err)}; last file: ${JSON.stringify(lastSc)}`);
    });
    assert.deepEqual(
      scFile.relations.find((r) => r.service === '/web')?.peers.map((p) => p.unit),
      [`/web#${index}`],
    );

    // Join: a second db unit appears in every web container's file without a restart.
    const webBefore = (await runningOf('rel.web.')).map((a) => a.instance_guid).sort();
    await deploy(2);
    for (const web of await runningOf('rel.web.')) {
      await waitFor(
        `web#${web.index} sees db#1 join`,
        async () => {
          const peers =
            (await relationsOf(web, 8080)).relations.find((r) => r.service === '/db')?.peers ?? [];
          return peers.map((p) => p.unit).join() === '/db#0,/db#1' ? true : undefined;
        },
        120_000,
      );
    }
    assert.deepEqual(
      (await runningOf('rel.web.')).map((a) => a.instance_guid).sort(),
      webBefore,
      'scaling /db updated the file in place: no web container restarted',
    );
    // A container started now gets the env snapshot: db#1 was placed after both peers ran.
    const db1 = await waitFor('db#1 running', async () =>
      (await runningOf('rel.db.')).find((a) => a.index === 1),
    );
    const env = await inContainer(db1, 5432, '/tmp/env');
    const line = env.split('\n').find((l) => l.startsWith('BERTH_RELATION_WEB='));
    assert.ok(line, `db#1 has BERTH_RELATION_WEB: ${env}`);
    assert.equal(line.split('=')[1]?.split(',').length, 2, line);

    // Depart: back to one db unit, and it leaves every web file.
    await deploy(1);
    for (const web of await runningOf('rel.web.')) {
      await waitFor(
        `web#${web.index} sees db#1 depart`,
        async () => {
          const peers =
            (await relationsOf(web, 8080)).relations.find((r) => r.service === '/db')?.peers ?? [];
          return peers.map((p) => p.unit).join() === '/db#0' ? true : undefined;
        },
        120_000,
      );
    }
  });

  it('kill -9 of a principal’s cell: the unit follows its instance to another cell, and its sidecar with it', async () => {
    const st = await status();
    const web = st.services.find((x) => x.path === '/web')!;
    const victim = web.units.find((u) => u.name === '/web#0')!.cell_id!;
    cluster.cells.get(victim)?.kill('SIGKILL');
    const moved = await waitFor(
      'web#0 and its sidecar running together on another cell',
      async () => {
        const now = await status();
        const w0 = now.services.find((x) => x.path === '/web')?.units.find((u) => u.name === '/web#0');
        const s0 = now.services
          .find((x) => x.path === '/shipper')
          ?.units.find((u) => u.principal === '/web#0');
        return w0?.cell_id && w0.cell_id !== victim && w0.state === 'RUNNING' && s0?.state === 'RUNNING'
          ? { w0, s0 }
          : undefined;
      },
      180_000,
    );
    assert.equal(moved.s0.cell_id, moved.w0.cell_id);
    const [sidecar] = (await runningOf('rel.shipper.')).filter((a) => a.process_guid.endsWith('.u0'));
    assert.equal(sidecar?.cell_id, moved.w0.cell_id, 'the sidecar container runs beside its principal');
  });

  it('teardown removes every unit, relation, DesiredLRP and container; the system is gone', async () => {
    const r = await runBerth(['teardown', 'rel', '--wait', '--server', serverUrl]);
    assert.equal(r.code, 0, `${r.stdout} ${r.stderr}`);
    const res = await fetch(`${serverUrl}/v1/systems/rel`);
    assert.equal(res.status, 404);
    assert.deepEqual(await bbs.listDesiredLRPs({ domain: 'system-rel' }), []);
    assert.deepEqual(await bbs.listActualLRPs({ domain: 'system-rel' }), []);
    await waitFor(
      'no containers left on any live cell',
      // The killed cell's pods outlive it (no rep stops them); cleanup collects them.
      async () => (liveCells().every((c) => cluster.runcContainers(c).length === 0) ? true : undefined),
      60_000,
    );
    const units = await fetch(`${serverUrl}/v1/relations?cell_id=c1`);
    assert.deepEqual(((await units.json()) as { units: unknown[] }).units, []);
    // Seed 003 Agents: the live cells' reps took their units out of scope, Dead and away.
    const logs = liveCells()
      .map((cell) => cluster.cellLogs.get(cell) ?? '')
      .join('\n');
    for (const kind of ['leave-scope', 'unit-dead', 'remove-unit'])
      assert.match(logs, new RegExp(`model agent: .*${kind} rel:`), `no cell did ${kind}:\n${logs}`);
  });
});
