import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { cellPlacementTag, openBbsStore, type SqlBbsStore } from '../bbs/index.js';
import { addCell } from './cell-rules.js';
import {
  modelServiceName,
  serviceProcessGuid,
  sidecarUnitGuid,
  systemDomain,
  unitName,
} from './instance-names.js';
import { runTxn } from './model-txn-runner.js';
import { addRelation } from './relation-rules.js';
import { addService } from './service-rules.js';
import { SqlModelTxnRunner } from './sql-model-txn-runner.js';
import { SqlSystemStore } from './sql-system-store.js';
import { SystemAgent } from './system-agent.js';
import type { ServiceDefinition } from './system-definition.js';
import { relationId } from './txn-parts.js';
import { addUnit } from './unit-rules.js';

// The applier against the real stores (SQLite): each action kind does its one write, and an action
// whose facts moved on is absorbed. Which actions to take is the planner's test.
const now = new Date('2024-06-01T12:00:00.000Z');
const web = modelServiceName('shop', '/web');
const log = modelServiceName('shop', '/log');
const db = modelServiceName('shop', '/db');
const logGuid = serviceProcessGuid('shop', '/log', 'bbbbbbbbbbbb');
const logSpec: ServiceDefinition = {
  path: '/log',
  image: 'bb:1',
  env: {},
  instances: 1,
  ports: [],
  memory_mb: 32,
  disk_mb: 64,
  routes: {},
  annotation: '',
  relations: [],
  subordinate_to: '/web',
};

describe('system agent applier (SQLite)', () => {
  let dir: string;
  let store: SqlBbsStore;
  let runner: SqlModelTxnRunner;
  let agent: SystemAgent;
  const logged: string[] = [];

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'berth-system-agent-'));
    store = await openBbsStore(join(dir, 'bbs.sqlite3'));
    runner = await SqlModelTxnRunner.open(store.backend, now);
    agent = new SystemAgent({
      store,
      systems: new SqlSystemStore(store.backend, () => now),
      runner,
      now: () => now,
      log: (message) => logged.push(message),
      actionTimeoutMs: 1_000,
    });
    await runTxn(runner, (v) => addService(v, web, { subordinate: false }));
    await runTxn(runner, (v) => addService(v, log, { subordinate: true }));
    await runTxn(runner, (v) => addService(v, db, { subordinate: false }));
    await runTxn(runner, (v) => addUnit(v, web, 0));
    await runTxn(runner, (v) => addUnit(v, db, 0));
    await runTxn(runner, (v) => addRelation(v, web, log, 'container'));
    await runTxn(runner, (v) => addRelation(v, web, db, 'global'));
  });

  after(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('place-unit adds a cell on first sight and assigns the unit; a second one moves it', async () => {
    await agent.apply('shop', [{ kind: 'place-unit', unit: unitName(web, 0), cell: 'c1', from: null }]);
    let view = await runner.read();
    assert.equal(view.cell('c1')?.life, 'alive');
    assert.equal(view.unit(unitName(web, 0))?.cell_id, 'c1');
    await agent.apply('shop', [{ kind: 'place-unit', unit: unitName(web, 0), cell: 'c2', from: 'c1' }]);
    view = await runner.read();
    assert.equal(view.unit(unitName(web, 0))?.cell_id, 'c2');
  });

  it('place-unit of a unit that is gone writes nothing and fails nothing', async () => {
    await agent.apply('shop', [{ kind: 'place-unit', unit: unitName(web, 9), cell: 'c2', from: null }]);
    assert.equal((await runner.read()).unit(unitName(web, 9)), undefined);
  });

  it('add-sidecar-unit creates the sidecar beside its principal', async () => {
    await agent.apply('shop', [{ kind: 'add-sidecar-unit', principal: unitName(web, 0), service: log }]);
    const sidecar = (await runner.read()).unit(unitName(log, 0));
    assert.equal(sidecar?.principal, unitName(web, 0));
    assert.equal(sidecar?.cell_id, 'c2');
  });

  it('pin-sidecar-lrp desires one instance pinned to the cell; with replace, it is pinned anew', async () => {
    const guid = sidecarUnitGuid(logGuid, 0);
    const pin = (cell: string, replace: boolean) =>
      agent.apply('shop', [{ kind: 'pin-sidecar-lrp', process_guid: guid, spec: logSpec, cell, replace }]);
    await pin('c1', false);
    let lrp = await store.getDesiredLRP({ process_guid: guid });
    assert.deepEqual(
      [lrp.instances, lrp.domain, lrp.placement_tags],
      [1, systemDomain('shop'), [cellPlacementTag('c1')]],
    );
    await pin('c2', false);
    lrp = await store.getDesiredLRP({ process_guid: guid });
    assert.deepEqual(lrp.placement_tags, [cellPlacementTag('c1')], 'an existing LRP is kept unless replaced');
    await pin('c2', true);
    lrp = await store.getDesiredLRP({ process_guid: guid });
    assert.deepEqual(lrp.placement_tags, [cellPlacementTag('c2')]);
  });

  it('enter-scope enters; one whose relation is gone is absorbed without a log line', async () => {
    await agent.apply('shop', [
      { kind: 'enter-scope', relation: relationId(web, db), unit: unitName(web, 0) },
      { kind: 'enter-scope', relation: relationId(web, 'shop:/gone'), unit: unitName(web, 0) },
    ]);
    assert.equal((await runner.read()).isInScope(relationId(web, db), unitName(web, 0)), true);
    assert.deepEqual(logged, []);
  });

  it('remove-sidecar-lrp removes it, and again finds it already gone', async () => {
    const guid = sidecarUnitGuid(logGuid, 0);
    await agent.apply('shop', [{ kind: 'remove-sidecar-lrp', process_guid: guid }]);
    await agent.apply('shop', [{ kind: 'remove-sidecar-lrp', process_guid: guid }]);
    assert.deepEqual(await store.listDesiredLRPs({ domain: systemDomain('shop') }), []);
  });

  it('retire-cell takes an empty cell through Dying and Dead out of the model', async () => {
    await runTxn(runner, (v) => addCell(v, 'c3'));
    await agent.apply('', [{ kind: 'retire-cell', cell: 'c3' }]);
    assert.equal((await runner.read()).cell('c3'), undefined);
  });
  it('restore-lrp desires a removed LRP again; restore-instances sets its count back; restore-unit adds a unit', async () => {
    const guid = serviceProcessGuid('shop', '/db', 'cccccccccccc');
    const { subordinate_to: _principal, ...principalSpec } = logSpec;
    const dbSpec: ServiceDefinition = { ...principalSpec, path: '/db', instances: 2 };
    await agent.apply('shop', [{ kind: 'restore-lrp', process_guid: guid, spec: dbSpec }]);
    let lrp = await store.getDesiredLRP({ process_guid: guid });
    assert.deepEqual([lrp.instances, lrp.domain], [2, systemDomain('shop')]);
    await store.updateDesiredLRP({ process_guid: guid, update: { instances: 7 } });
    await agent.apply('shop', [{ kind: 'restore-instances', process_guid: guid, instances: 2 }]);
    lrp = await store.getDesiredLRP({ process_guid: guid });
    assert.equal(lrp.instances, 2);
    await agent.apply('shop', [
      { kind: 'restore-unit', service: db, index: 1 },
      { kind: 'restore-unit', service: db, index: 1 },
    ]);
    assert.equal((await runner.read()).unit(unitName(db, 1))?.life, 'alive');
  });
});
