import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { FastifyRequest } from 'fastify';
import { type ActualLRP, openBbsStore, type SqlBbsStore } from '../bbs/index.js';
import type { ActionRecord } from '../model/index.js';
import { desiredDefinition, desiredTask } from '../testing/bbs-fixtures.js';
import { launchOf } from '../testing/history-store-contract.js';
import { buildApp } from './build-app.js';
import { createHistoryServerParts, type HistoryServerParts } from './history-server-parts.js';
import { recordSystemUserAction, systemActionHistory } from './system-action-history.js';

/**
 * Issue 19 item 2: a system's LRPs and tasks change only through the system's actions. The deploy
 * executor claims its domain (`upsertDomain` with `owner`) and writes through the store in process;
 * every public writer gets 409 naming the system. And item 6: a user's public write is a `user`
 * item, with the token's user name, on every container it stops.
 */
describe('public writes to a system-owned domain', () => {
  let dir: string;
  let store: SqlBbsStore;
  let parts: HistoryServerParts;
  let app: Awaited<ReturnType<typeof buildApp>>;
  let alice: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'berth-ownership-'));
    store = await openBbsStore(':memory:');
    parts = await createHistoryServerParts(store, { auth: 'tokens', dataDir: dir });
    app = await buildApp({
      store,
      auth: parts.auth,
      history: { history: parts.history, webhooks: parts.webhooks, tokens: parts.tokens },
    });
    alice = (await parts.tokens.create({ role: 'operator', name: 'alice' })).token;
    // What a deploy of system "shop" leaves: its domain claimed, an LRP and a job task in it.
    await store.upsertDomain({ domain: 'system-shop', ttl_ms: 0, owner: 'shop' });
    await store.desireLRP(desiredDefinition('shop.web.v1', 2, { domain: 'system-shop' }));
    await store.desireTask(desiredTask('shop.migrate.v1', { domain: 'system-shop' }));
    await store.desireLRP(desiredDefinition('plain-web', 3, { domain: 'plain' }));
  });
  after(async () => {
    await app.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** An instance claimed and started on a cell, as a rep would: its container is its instance guid. */
  async function runOnCell(processGuid: string, index: number): Promise<ActualLRP> {
    const key = { process_guid: processGuid, index };
    const unclaimed = (await store.getActualLRP(key)).instance!;
    const instance_key = { instance_guid: `ig-${processGuid}-${index}`, cell_id: 'cell-a' };
    const claimed = await store.claimActualLRP({
      ...key,
      expected: unclaimed.modification_tag,
      instance_key,
    });
    return store.startActualLRP({
      ...key,
      expected: claimed.modification_tag,
      instance_key,
      net_info: { address: '10.0.0.5', ports: [] },
    });
  }

  const call = (method: 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) =>
    app.inject({
      method,
      url,
      ...(payload ? { payload } : {}),
      headers: { authorization: `Bearer ${alice}` },
    });

  const refusals: ReadonlyArray<[string, 'POST' | 'PATCH' | 'DELETE', string, object | undefined, RegExp]> = [
    [
      'desire an LRP in the domain',
      'POST',
      '/v1/desired_lrps',
      desiredDefinition('sneaky', 1, { domain: 'system-shop' }),
      /berth deploy/,
    ],
    [
      'scale its LRP',
      'PATCH',
      '/v1/desired_lrps/shop.web.v1',
      { instances: 9 },
      /berth service scale shop\//,
    ],
    ['remove its LRP', 'DELETE', '/v1/desired_lrps/shop.web.v1', undefined, /berth teardown shop/],
    [
      'desire a task in the domain',
      'POST',
      '/v1/tasks',
      desiredTask('sneaky-task', { domain: 'system-shop' }),
      /berth deploy/,
    ],
    ['cancel its task', 'POST', '/v1/tasks/shop.migrate.v1/cancel', undefined, /berth teardown shop/],
    ['resolve its task', 'POST', '/v1/tasks/shop.migrate.v1/resolve', undefined, /berth deploy/],
    ['delete its task', 'DELETE', '/v1/tasks/shop.migrate.v1', undefined, /berth teardown shop/],
  ];
  for (const [name, method, url, payload, instead] of refusals) {
    it(`${name}: 409 naming the system and the command to use`, async () => {
      const res = await call(method, url, payload);
      assert.equal(res.statusCode, 409, res.body);
      const body = res.json() as { code: string; message: string; details: { system: string } };
      assert.equal(body.code, 'conflict');
      assert.equal(body.details.system, 'shop');
      assert.match(body.message, /belongs to system "shop"/);
      assert.match(body.message, instead);
    });
  }

  it("leaves the system's records as they were", async () => {
    const lrp = await store.getDesiredLRP({ process_guid: 'shop.web.v1' });
    assert.equal(lrp.instances, 2);
    const task = await store.getTask({ task_guid: 'shop.migrate.v1' });
    assert.equal(task.state, 'PENDING');
    await assert.rejects(store.getDesiredLRP({ process_guid: 'sneaky' }), { code: 'not_found' });
    await assert.rejects(store.getTask({ task_guid: 'sneaky-task' }), { code: 'not_found' });
  });

  it("the system's own actions (the store in process) still change them", async () => {
    const lrp = await store.updateDesiredLRP({ process_guid: 'shop.web.v1', update: { instances: 3 } });
    assert.equal(lrp.instances, 3);
  });

  it("leaves other domains' LRPs alone, and records a user's scale down on the instances it stops", async () => {
    // Two instances of the plain LRP run on a cell: their containers are the instance guids.
    const running = [await runOnCell('plain-web', 1), await runOnCell('plain-web', 2)];
    const res = await call('PATCH', '/v1/desired_lrps/plain-web', { instances: 1 });
    assert.equal(res.statusCode, 200, res.body);
    for (const actual of running) {
      const container = await parts.history.getContainer(actual.instance_guid);
      const item = container.history.find((h) => h.entity_type === 'user');
      assert.ok(item, `a user item on ${actual.instance_guid}`);
      assert.equal(item.entity_id, 'alice');
      assert.equal(item.status, 'stop');
      assert.match(item.message ?? '', /plain-web scaled to 1 instances/);
    }
    const removed = await call('DELETE', '/v1/desired_lrps/plain-web');
    assert.equal(removed.statusCode, 204, removed.body);
  });

  it('a launch a cell reports with its domain carries the system owning it; `ps --system` finds it', async () => {
    const when = new Date().toISOString();
    const ingest = await call('POST', '/v1/containers/events', {
      records: [
        {
          type: 'launch',
          container: launchOf('ig-shop-0', { owner_id: 'shop.web.v1/0' }),
          external_timestamp: when,
          domain: 'system-shop',
        },
        {
          type: 'launch',
          container: launchOf('ig-plain-0', { owner_id: 'plain-web/0' }),
          external_timestamp: when,
          domain: 'plain',
        },
      ],
    });
    assert.equal(ingest.statusCode, 200, ingest.body);
    assert.equal((await parts.history.getContainer('ig-shop-0')).system, 'shop');
    assert.equal((await parts.history.getContainer('ig-plain-0')).system, null);
    const listed = await app.inject({
      method: 'GET',
      url: '/v1/containers?system=shop',
      headers: { authorization: `Bearer ${alice}` },
    });
    const ids = (listed.json() as { containers: Array<{ id: string }> }).containers.map((c) => c.id);
    assert.deepEqual(ids, ['ig-shop-0']);
  });

  it("a user's action on a whole system is a user item on each of its running containers", async () => {
    const instance = await runOnCell('shop.web.v1', 0);
    const recorded = await recordSystemUserAction(parts.history, store, {
      system: 'shop',
      user_id: 'alice',
      status: 'stop',
      message: 'teardown of shop',
      at: new Date(),
    });
    assert.equal(recorded.recorded, 1, 'the one running instance (the PENDING job has no container)');
    const item = (await parts.history.getContainer(instance.instance_guid)).history.find(
      (h) => h.entity_type === 'user',
    );
    assert.equal(item?.entity_id, 'alice');
    assert.equal(item?.message, 'teardown of shop');
  });

  it("the system routes' hook records an accepted deploy as the caller's update item", async () => {
    const instance = await runOnCell('shop.web.v1', 1);
    const request = { principal: { user: 'bob', role: 'operator', token_id: 't' }, log: { warn() {} } };
    const action = { id: 'd-42', system: 'shop', kind: 'deploy', path: '/web' } as ActionRecord;
    await systemActionHistory(parts.history, store)(request as unknown as FastifyRequest, action);
    const item = (await parts.history.getContainer(instance.instance_guid)).history.find(
      (h) => h.entity_type === 'user' && h.entity_id === 'bob',
    );
    assert.equal(item?.status, 'update');
    assert.equal(item?.message, 'deploy of /web accepted as action d-42');
  });
});
