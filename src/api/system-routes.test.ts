import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { openBbsStore, type SqlBbsStore } from '../bbs/index.js';
import {
  type ActionRecord,
  type AgentActionResult,
  CellAgent,
  type CellAgentTransport,
  isLiveAction,
  type ModelData,
  modelRead,
  SystemDeployer,
} from '../model/index.js';
import { playSystem, playCells as runInstances, type TaskFailure } from '../testing/system-cells.js';
import { buildApp } from './build-app.js';

const shop = `system: shop
services:
  /web/api:
    image: bb:1
    command: ["/bin/busybox", "httpd", "-f", "-p", "8080", "-h", "/"]
    instances: 2
    ports: [8080]
    monitor: {tcp: 8080}
    memory_mb: 32
    relations: ["/db"]
  /db:
    image: bb:1
    command: ["/bin/sleep", "100000"]
  /log-shipper:
    image: bb:1
    command: ["/bin/sleep", "100000"]
    subordinate_to: /web/api
jobs:
  /migrate:
    image: bb:1
    command: ["/bin/true"]
`;

const tree = (image = 'bb:1') => `system: tree
services:
  /a/b:
    image: ${image}
  /a/c:
    image: ${image}
`;

interface Harness {
  app: FastifyInstance;
  store: SqlBbsStore;
  deployer: SystemDeployer;
  /** Releases held actions (those accepted while `hold` was on). */
  release(): void;
  hold: boolean;
  close(): Promise<void>;
}

async function harness(): Promise<Harness> {
  const dir = mkdtempSync(join(tmpdir(), 'berth-systems-'));
  const store = await openBbsStore(join(dir, 'bbs.sqlite3'));
  let releaseAll: () => void = () => {};
  let held = Promise.resolve();
  const h: Partial<Harness> = { hold: false };
  const deployer = await SystemDeployer.open({
    store,
    backend: store.backend,
    owner: 'test-server',
    pollMs: 20,
    actionTimeoutMs: 20_000,
    gate: async () => {
      if (h.hold) await held;
    },
  });
  const app = await buildApp({ store, systems: deployer, logger: false });
  const reset = () => {
    held = new Promise<void>((resolve) => {
      releaseAll = resolve;
    });
  };
  reset();
  return Object.assign(h, {
    app,
    store,
    deployer,
    release: () => {
      releaseAll();
      reset();
    },
    close: async () => {
      releaseAll();
      await deployer.stop();
      await app.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  }) as Harness;
}

async function deploy(h: Harness, definition: string, path?: string) {
  return h.app.inject({
    method: 'POST',
    url: '/v1/deploys',
    payload: { definition, ...(path ? { path } : {}) },
  });
}

/**
 * Waits for an action to end while the cells run its system's instances and jobs: a deploy lasts
 * until they run (issue 19).
 */
async function waitAction(h: Harness, id: string, failTasks?: TaskFailure): Promise<ActionRecord> {
  let stop: (() => void) | undefined;
  try {
    for (;;) {
      const res = await h.app.inject({ method: 'GET', url: `/v1/deploys/${id}` });
      const action = res.json() as ActionRecord;
      if (!isLiveAction(action.state)) return action;
      stop ??= playSystem(h.store, action.system, failTasks);
      await new Promise((r) => setTimeout(r, 20));
    }
  } finally {
    stop?.();
  }
}

describe('system API (in-process, SQLite)', () => {
  let h: Harness;
  before(async () => {
    h = await harness();
  });
  after(async () => {
    await h?.close();
  });

  it('an invalid definition is a 400 listing every problem, and nothing is written', async () => {
    const res = await deploy(
      h,
      `system: Bad_Name
services:
  /web:
    image: ""
    instances: -1
    relations: ["/nope"]
  web2:
    image: x
jobs:
  /web:
    image: y
`,
    );
    assert.equal(res.statusCode, 400);
    const body = res.json() as { code: string; details: { problems: { path: string; field: string }[] } };
    assert.equal(body.code, 'invalid_argument');
    const fields = body.details.problems.map((p) => `${p.path} ${p.field}`);
    for (const want of ['/web image', '/web instances', 'web2 ', '/web ']) {
      assert.ok(
        fields.some((f) => f.startsWith(want)),
        `${want} in ${fields.join('; ')}`,
      );
    }
    assert.ok(body.details.problems.some((p) => p.field === 'system'));
    const yamlError = await deploy(h, 'system: [unclosed');
    assert.equal(yamlError.statusCode, 400);
    assert.match(yamlError.json().message, /YAML line 1/);
    const counts = await modelRead(h.store.backend, async (db) => ({
      systems: (await db.selectFrom('model_systems').selectAll().execute()).length,
      actions: (await db.selectFrom('model_actions').selectAll().execute()).length,
      locks: (await db.selectFrom('model_locks').selectAll().execute()).length,
    }));
    assert.deepEqual(counts, { systems: 0, actions: 0, locks: 0 });
    assert.equal((await h.store.listDesiredLRPs()).length, 0);
  });

  it('deploys of /a/b and /a/c run together; /a and a teardown during them fail at once naming the holder', async () => {
    const first = await deploy(h, tree(), '/');
    assert.equal(first.statusCode, 202);
    assert.equal((await waitAction(h, first.json().id)).state, 'succeeded');
    h.hold = true;
    const b = await deploy(h, tree('bb:2'), '/a/b');
    const c = await deploy(h, tree('bb:2'), '/a/c');
    assert.equal(b.statusCode, 202, b.body);
    assert.equal(c.statusCode, 202, c.body);
    const a = await deploy(h, tree('bb:2'), '/a');
    assert.equal(a.statusCode, 409);
    const holder = a.json().details.holder as { action_id: string; action_path: string; mode: string };
    assert.ok([b.json().id, c.json().id].includes(holder.action_id), a.body);
    assert.match(
      a.json().message,
      /Cannot deploy \/a in system "tree": deploy d-\S+ of \/a\/[bc] holds IX on \/a/,
    );
    const down = await h.app.inject({ method: 'POST', url: '/v1/systems/tree/teardown' });
    assert.equal(down.statusCode, 409);
    assert.match(
      down.json().message,
      /Cannot tear down in system "tree": deploy d-\S+ of \/a\/[bc] holds IX on \//,
    );
    const root = await deploy(h, tree('bb:2'), '/');
    assert.equal(root.statusCode, 409);
    h.hold = false;
    h.release();
    // No cell runs anything: the rolling updates wait; play the cells so they finish.
    const waits = [b, c].map((r) => waitAction(h, r.json().id));
    const cells = setInterval(() => void runInstances(h.store, 'system-tree').catch(() => {}), 30);
    const [db, dc] = (await Promise.all(waits)) as [ActionRecord, ActionRecord];
    clearInterval(cells);
    assert.deepEqual([db.state, dc.state], ['succeeded', 'succeeded'], JSON.stringify([db, dc]));
    // Released with their final state: /a is free now.
    const locks = await h.deployer.systems.locks('tree');
    assert.deepEqual(locks, []);
  });

  it('a teardown holds / exclusively: a deploy during it fails at once', async () => {
    h.hold = true;
    const down = await h.app.inject({ method: 'POST', url: '/v1/systems/tree/teardown' });
    assert.equal(down.statusCode, 202);
    const d = await deploy(h, tree('bb:3'), '/a/b');
    assert.equal(d.statusCode, 409);
    assert.match(d.json().message, /teardown d-\S+ of \/ holds X on \//);
    h.hold = false;
    h.release();
    const cells = setInterval(() => void runInstances(h.store, 'system-tree').catch(() => {}), 30);
    const ended = await waitAction(h, down.json().id);
    clearInterval(cells);
    assert.equal(ended.state, 'succeeded', JSON.stringify(ended));
    assert.equal((await h.app.inject({ method: 'GET', url: '/v1/systems/tree' })).statusCode, 404);
    assert.deepEqual(await h.store.listDesiredLRPs({ domain: 'system-tree' }), []);
  });

  it('deploy creates DesiredLRPs, the job task, units, a relation and sidecars; in-place vs new version; teardown removes everything', async () => {
    const res = await deploy(h, shop);
    assert.equal(res.statusCode, 202);
    assert.equal((await waitAction(h, res.json().id)).state, 'succeeded');
    const desired = await h.store.listDesiredLRPs({ domain: 'system-shop' });
    const api = desired.find((d) => d.process_guid.startsWith('shop.web.api.'));
    assert.equal(api?.instances, 2);
    assert.ok(desired.some((d) => d.process_guid.startsWith('shop.db.')));
    assert.equal((await h.store.listTasks({ domain: 'system-shop' })).length, 1);
    // Cells run the instances; the server places units and creates the sidecar units beside them.
    await runInstances(h.store, 'system-shop');
    await h.deployer.reconcile('shop');
    const sidecarLrps = (await h.store.listDesiredLRPs({ domain: 'system-shop' })).filter((d) =>
      d.process_guid.startsWith('shop.log-shipper.'),
    );
    assert.equal(sidecarLrps.length, 2);
    await runInstances(h.store, 'system-shop');
    await h.deployer.reconcile('shop');
    const status = (await h.app.inject({ method: 'GET', url: '/v1/systems/shop' })).json();
    assert.equal(status.name, 'shop');
    assert.equal(status.state, 'stable', JSON.stringify(status, null, 1));
    const apiStatus = status.services.find((s: { path: string }) => s.path === '/web/api');
    assert.deepEqual(
      apiStatus.units.map((u: { index: number; life: string; state: string }) => [u.index, u.life, u.state]),
      [
        [0, 'alive', 'RUNNING'],
        [1, 'alive', 'RUNNING'],
      ],
    );
    const shipper = status.services.find((s: { path: string }) => s.path === '/log-shipper');
    for (const u of shipper.units) {
      const principal = apiStatus.units.find((p: { name: string }) => p.name === u.principal);
      assert.ok(principal, `${u.name} has a principal`);
      assert.equal(u.cell_id, principal.cell_id, `${u.name} is on its principal's cell`);
    }
    for (const d of sidecarLrps) assert.match(d.placement_tags.join(), /^cell:cell-\d$/);
    const rel = status.relations.find((r: { kind: string }) => r.kind === 'global');
    assert.deepEqual(rel.endpoints, ['/db', '/web/api']);
    assert.equal(rel.life, 'alive');
    assert.deepEqual(rel.scope, ['/db#0', '/web/api#0', '/web/api#1']);
    const list = (await h.app.inject({ method: 'GET', url: '/v1/systems' })).json();
    assert.deepEqual(list.systems, [{ name: 'shop', state: 'stable' }]);

    // Relation data for the cells: each unit sees the other end's units at their addresses.
    const onCell = (await h.app.inject({ method: 'GET', url: '/v1/relations?cell_id=cell-0' })).json();
    const db0 = onCell.units.find((u: { file: { unit: string } }) => u.file.unit === '/db#0');
    assert.ok(db0, JSON.stringify(onCell));
    assert.deepEqual(
      db0.file.relations.map((r: { service: string; peers: { unit: string }[] }) => [
        r.service,
        r.peers.map((p) => p.unit),
      ]),
      [['/web/api', ['/web/api#0', '/web/api#1']]],
    );
    assert.equal(db0.env.BERTH_RELATION_WEB_API, '10.0.0.1,10.0.0.1');
    const one = await h.app.inject({ method: 'GET', url: `/v1/relations/${api!.process_guid}/1` });
    assert.equal(one.statusCode, 200);
    assert.equal(one.json().file.unit, '/web/api#1');
    assert.equal((await h.app.inject({ method: 'GET', url: '/v1/relations/nope/0' })).statusCode, 404);
    const bad = await h.app.inject({ method: 'GET', url: `/v1/relations/${api!.process_guid}/-1` });
    assert.equal(bad.statusCode, 400);
    assert.match(bad.json().message, /index/);
    assert.equal((await h.app.inject({ method: 'GET', url: '/v1/relations' })).statusCode, 400);

    // Only instances changed: the same DesiredLRP, updated in place.
    const scaled = await deploy(h, shop.replace('instances: 2', 'instances: 3'));
    assert.equal((await waitAction(h, scaled.json().id)).state, 'succeeded');
    const after = await h.store.getDesiredLRP({ process_guid: api!.process_guid });
    assert.equal(after.instances, 3);
    // The image changed: a new version, rolled while the cells run it.
    const rolled = await deploy(
      h,
      shop
        .replace('instances: 2', 'instances: 3')
        .replace('image: bb:1\n    command: ["/bin/busybox"', 'image: bb:2\n    command: ["/bin/busybox"'),
    );
    const cells = setInterval(() => void runInstances(h.store, 'system-shop').catch(() => {}), 30);
    const done = await waitAction(h, rolled.json().id);
    clearInterval(cells);
    assert.equal(done.state, 'succeeded', JSON.stringify(done));
    const apis = (await h.store.listDesiredLRPs({ domain: 'system-shop' })).filter((d) =>
      d.process_guid.startsWith('shop.web.api.'),
    );
    assert.equal(apis.length, 1);
    assert.notEqual(apis[0]!.process_guid, api!.process_guid);
    assert.equal(apis[0]!.image, 'bb:2');

    const down = await h.app.inject({ method: 'POST', url: '/v1/systems/shop/teardown' });
    assert.equal(down.statusCode, 202);
    const stopping = setInterval(() => void runInstances(h.store, 'system-shop').catch(() => {}), 30);
    assert.equal((await waitAction(h, down.json().id)).state, 'succeeded');
    clearInterval(stopping);
    assert.deepEqual(await h.store.listDesiredLRPs({ domain: 'system-shop' }), []);
    assert.deepEqual(await h.store.listActualLRPs({ domain: 'system-shop' }), []);
    assert.deepEqual(await h.store.listTasks({ domain: 'system-shop' }), []);
    const model = await h.deployer.runner.dump();
    assert.deepEqual(
      [model.services, model.units, model.relations].map((l) => l.length),
      [0, 0, 0],
    );
    // The played cells never had a presence: with no units left, the agent retires them.
    assert.deepEqual(
      model.cells.map((c) => c.id),
      ['cell-0', 'cell-1', 'cell-2'],
    );
    await h.deployer.reconcileAll();
    assert.deepEqual((await h.deployer.runner.dump()).cells, []);
    assert.equal((await h.app.inject({ method: 'GET', url: '/v1/systems/shop' })).statusCode, 404);
  });

  it('a job: the deploy waits for it; completed stays completed after the BBS deleted its task; a failed job fails the deploy with its reason', async () => {
    const jobs = (command: string) => `system: jobs
services:
  /svc:
    image: bb:1
jobs:
  /migrate:
    image: bb:1
    command: ["${command}"]
`;
    const ok = await deploy(h, jobs('/bin/true'));
    assert.equal((await waitAction(h, ok.json().id)).state, 'succeeded');
    const [task] = await h.store.listTasks({ domain: 'system-jobs' });
    assert.equal(task?.state, 'COMPLETED');
    // The converger deletes a completed task after a while (resolving, then deleting, as here).
    const resolving = await h.store.resolvingTask({
      task_guid: task!.task_guid,
      expected: task!.modification_tag,
    });
    await h.store.deleteTask({ task_guid: task!.task_guid, expected: resolving.modification_tag });
    const status = (await h.app.inject({ method: 'GET', url: '/v1/systems/jobs' })).json();
    const job = status.services.find((s: { path: string }) => s.path === '/migrate');
    assert.deepEqual([job.kind, job.state], ['job', 'completed']);
    // The same job version is not run again by the next deploy.
    const again = await deploy(h, jobs('/bin/true'));
    assert.equal((await waitAction(h, again.json().id)).state, 'succeeded');
    assert.deepEqual(await h.store.listTasks({ domain: 'system-jobs' }), []);

    // A new version whose task fails: the deploy fails naming the job and its reason.
    const failing = await deploy(h, jobs('/bin/false'));
    const id = failing.json().id as string;
    const ended = await waitAction(h, id, () => 'exited with status 1');
    assert.deepEqual([ended.state, ended.reason], ['failed', 'job /migrate failed: exited with status 1']);
    const after = (await h.app.inject({ method: 'GET', url: '/v1/systems/jobs' })).json();
    const failedJob = after.services.find((s: { path: string }) => s.path === '/migrate');
    assert.deepEqual([failedJob.state, failedJob.reason], ['failed', 'exited with status 1']);
    // An active system whose redeploy failed: degraded, with the reason.
    assert.deepEqual([after.state, after.phase], ['degraded', 'active']);
    assert.equal(after.reason, 'last deploy failed: job /migrate failed: exited with status 1');
    const down = await h.app.inject({ method: 'POST', url: '/v1/systems/jobs/teardown' });
    assert.equal((await waitAction(h, down.json().id)).state, 'succeeded');
  });

  it("a cell's agents: its part of the model, its actions refused for other cells' units, a teardown that waits for them", async () => {
    const pair = `system: pair
services:
  /front:
    image: bb:1
    instances: 2
    relations: ["/back"]
  /back:
    image: bb:1
`;
    assert.equal((await waitAction(h, (await deploy(h, pair)).json().id)).state, 'succeeded');
    await runInstances(h.store, 'system-pair');
    await h.deployer.reconcile('pair');
    const status = (await h.app.inject({ method: 'GET', url: '/v1/systems/pair' })).json();
    const units = status.services.flatMap((s: { units: { name: string; cell_id: string }[] }) => s.units);
    const cell = units[0].cell_id as string;
    const mine = units
      .filter((u: { cell_id: string }) => u.cell_id === cell)
      .map((u: { name: string }) => u.name);
    const other = units.find((u: { cell_id: string }) => u.cell_id !== cell);
    assert.ok(other, JSON.stringify(units));

    const view = await h.app.inject({ method: 'GET', url: `/v1/agents/cells/${cell}/model` });
    assert.equal(view.statusCode, 200);
    const data = view.json() as ModelData;
    assert.deepEqual(
      data.units.map((u) => `${u.service.replace('pair:', '')}#${u.index}`).sort(),
      [...mine].sort(),
    );
    assert.ok(data.units.every((u) => u.cell_id === cell));

    const bad = await h.app.inject({
      method: 'POST',
      url: `/v1/agents/cells/${cell}/actions`,
      payload: { actions: [{ kind: 'remove-cell', cell }] },
    });
    assert.equal(bad.statusCode, 400, 'the provisioner is not a cell agent');
    const foreign = await h.app.inject({
      method: 'POST',
      url: `/v1/agents/cells/${cell}/actions`,
      payload: { actions: [{ kind: 'unit-dying', unit: `pair:${other.name}` }] },
    });
    assert.equal(foreign.statusCode, 200);
    const [refused] = foreign.json().results as AgentActionResult[];
    assert.equal(refused?.error?.code, 'forbidden', foreign.body);

    // The cell announces that it runs its agents: the teardown leaves its units to it.
    await h.store.heartbeatCell({
      presence: {
        cell_id: cell,
        zone: 'z1',
        capacity: { memory_mb: 1024, disk_mb: 1024, containers: 10 },
        rep_url: 'http://127.0.0.1:1',
        placement_tags: [],
        model_agent: true,
      },
      ttl_ms: 120_000,
    });
    const down = await h.app.inject({ method: 'POST', url: '/v1/systems/pair/teardown' });
    const stopping = setInterval(() => void runInstances(h.store, 'system-pair').catch(() => {}), 30);
    try {
      await new Promise((r) => setTimeout(r, 500));
      const running = (await h.app.inject({ method: 'GET', url: `/v1/deploys/${down.json().id}` })).json();
      assert.equal(running.state, 'in_progress', 'the teardown finished without the cell agent');
      const left = (await h.deployer.runner.dump()).units.filter((u) => u.service.startsWith('pair:'));
      assert.ok(left.length > 0 && left.every((u) => u.cell_id === cell), JSON.stringify(left));

      // The cell's agent, over the same routes.
      const transport: CellAgentTransport = {
        view: async () =>
          (await h.app.inject({ method: 'GET', url: `/v1/agents/cells/${cell}/model` })).json() as ModelData,
        act: async (actions) =>
          (
            await h.app.inject({
              method: 'POST',
              url: `/v1/agents/cells/${cell}/actions`,
              payload: { actions },
            })
          ).json().results as AgentActionResult[],
      };
      const agent = new CellAgent({ cellId: cell, transport, intervalMs: 50 });
      agent.start();
      const ended = await waitAction(h, down.json().id);
      await agent.stop();
      assert.equal(ended.state, 'succeeded', JSON.stringify(ended));
    } finally {
      clearInterval(stopping);
      await h.store.removeCell({ cell_id: cell });
    }
    assert.deepEqual(
      (await h.deployer.runner.dump()).units.filter((u) => u.service.startsWith('pair:')),
      [],
    );
  });
});
