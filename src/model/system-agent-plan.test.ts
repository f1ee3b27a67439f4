import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type ActualLRP, type ActualLRPState, cellPlacementTag, type DesiredLRP } from '../bbs/index.js';
import { ModelBuilder } from '../testing/model-builder.js';
import {
  modelServiceName,
  serviceProcessGuid,
  sidecarUnitGuid,
  systemDomain,
  unitName,
} from './instance-names.js';
import { destroyRelation } from './relation-rules.js';
import { destroyService } from './service-rules.js';
import { destroySidecarUnit } from './sidecar-rules.js';
import {
  planCellRetirement,
  planRestore,
  planScopeEntries,
  planSidecarLRPPruning,
  planSidecarLRPs,
  planSidecarUnits,
  planUnitPlacement,
} from './system-agent-plan.js';
import type { ServiceDefinition } from './system-definition.js';
import type { ServiceRecord, SystemServiceRecord } from './system-service-record.js';
import { relationId } from './txn-parts.js';
import { destroyUnit } from './unit-rules.js';

// The system agent's rules read no clock: every fact they act on is in the snapshot. Its model
// writes that do take a time (none today) would get it from the applier.
const now = new Date('2024-06-01T12:00:00.000Z');
const tag = { epoch: 'e', index: 1 };
const web = modelServiceName('shop', '/web');
const log = modelServiceName('shop', '/log');
const db = modelServiceName('shop', '/db');
const webGuid = serviceProcessGuid('shop', '/web', 'aaaaaaaaaaaa');
const logGuid = serviceProcessGuid('shop', '/log', 'bbbbbbbbbbbb');
const dbGuid = serviceProcessGuid('shop', '/db', 'cccccccccccc');

function spec(path: string, over: Partial<ServiceDefinition> = {}): ServiceDefinition {
  return {
    path,
    image: 'bb:1',
    env: {},
    instances: 2,
    ports: [],
    memory_mb: 32,
    disk_mb: 64,
    routes: {},
    annotation: '',
    relations: [],
    ...over,
  };
}

function row(path: string, processGuid: string, over: Partial<ServiceDefinition> = {}): ServiceRecord {
  return {
    system: 'shop',
    path,
    kind: 'service',
    model_name: modelServiceName('shop', path),
    version: processGuid.split('.').at(-1) ?? '',
    spec: spec(path, over),
    process_guid: processGuid,
    old_process_guid: null,
  };
}

const services: readonly SystemServiceRecord[] = [
  row('/web', webGuid),
  row('/log', logGuid, { subordinate_to: '/web' }),
  row('/db', dbGuid, { instances: 1 }),
  {
    system: 'shop',
    path: '/migrate',
    kind: 'job',
    model_name: '',
    version: 'dddddddddddd',
    spec: { path: '/migrate', image: 'bb:1', env: {}, memory_mb: 32, disk_mb: 64, annotation: '' },
    process_guid: serviceProcessGuid('shop', '/migrate', 'dddddddddddd'),
    old_process_guid: null,
  },
];

function actual(processGuid: string, index: number, state: ActualLRPState, cell: string): ActualLRP {
  return {
    process_guid: processGuid,
    index,
    domain: systemDomain('shop'),
    instance_guid: `${processGuid}-${index}`,
    cell_id: cell,
    state,
    crash_count: 0,
    last_crashed_at: null,
    crash_reason: '',
    since: now.toISOString(),
    placement_error: '',
    address: '',
    ports: [],
    evacuating: false,
    modification_tag: tag,
  };
}

function desired(processGuid: string, placementTags: readonly string[] = []): DesiredLRP {
  return {
    process_guid: processGuid,
    domain: systemDomain('shop'),
    instances: 1,
    image: 'bb:1',
    env: {},
    memory_mb: 32,
    disk_mb: 64,
    ports: [],
    routes: {},
    annotation: '',
    start_timeout_s: 60,
    placement_tags: placementTags,
    created_at: now.toISOString(),
    modification_tag: tag,
  };
}

/** web (2 units: #0 unplaced, #1 on c1), its sidecar service log, db (1 unit on c2), related. */
function model(): ModelBuilder {
  return new ModelBuilder()
    .cell('c1')
    .cell('c2')
    .service(web)
    .service(log, true)
    .service(db)
    .units(web, 1)
    .units(web, 1, ['c1', 'c1'], 1)
    .units(db, 1, ['c2'])
    .relate(web, log, 'container')
    .relate(web, db);
}

const noAgents: ReadonlySet<string> = new Set();

/** A sidecar goes Dying only with its principal or its relation: here its relation goes. */
function dyingSidecar(m: ModelBuilder): void {
  m.apply((v) => destroyRelation(v, relationId(web, log), now));
  m.apply((v) => destroySidecarUnit(v, unitName(log, 1), now));
  assert.equal(m.view.unit(unitName(log, 1))?.life, 'dying');
}

describe('system agent plan, stage 1: units follow their instances', () => {
  it('an unassigned Alive unit is assigned to the cell of its instance at first placement (CLAIMED counts)', () => {
    const view = model().view;
    const actuals = [actual(webGuid, 0, 'CLAIMED', 'c2')];
    assert.deepEqual(planUnitPlacement({ services, actuals, view }), [
      { kind: 'place-unit', unit: unitName(web, 0), cell: 'c2', from: null },
    ]);
  });

  it('an assigned unit moves only once its instance RUNS on another cell', () => {
    const view = model().view;
    assert.deepEqual(
      planUnitPlacement({ services, actuals: [actual(webGuid, 1, 'CLAIMED', 'c2')], view }),
      [],
    );
    assert.deepEqual(planUnitPlacement({ services, actuals: [actual(webGuid, 1, 'RUNNING', 'c2')], view }), [
      { kind: 'place-unit', unit: unitName(web, 1), cell: 'c2', from: 'c1' },
    ]);
  });

  it('a unit whose instance runs on its own cell, or has no cell yet, stays', () => {
    const view = model().view;
    const actuals = [actual(webGuid, 1, 'RUNNING', 'c1'), actual(webGuid, 0, 'UNCLAIMED', '')];
    assert.deepEqual(planUnitPlacement({ services, actuals, view }), []);
  });

  it('another version’s instance (a rolling update’s old one) does not place the unit', () => {
    const view = model().view;
    const old = serviceProcessGuid('shop', '/web', '000000000000');
    assert.deepEqual(planUnitPlacement({ services, actuals: [actual(old, 0, 'RUNNING', 'c2')], view }), []);
  });

  it('a Dying unit is not placed', () => {
    const m = model();
    m.apply((v) => destroyUnit(v, unitName(web, 0), now));
    const actuals = [actual(webGuid, 0, 'RUNNING', 'c2')];
    assert.deepEqual(planUnitPlacement({ services, actuals, view: m.view }), []);
  });

  it('sidecar rows are skipped: their units go where their principals are', () => {
    const m = model().sidecar(unitName(web, 1), log);
    const actuals = [actual(sidecarUnitGuid(logGuid, 1), 0, 'RUNNING', 'c2')];
    assert.deepEqual(planUnitPlacement({ services, actuals, view: m.view }), []);
  });
});

describe('system agent plan, stage 2: placed principals get their sidecar units', () => {
  it('a placed principal without its sidecar gets one; an unplaced one waits', () => {
    assert.deepEqual(planSidecarUnits({ services, view: model().view, agentCells: noAgents }), [
      { kind: 'add-sidecar-unit', principal: unitName(web, 1), service: log },
    ]);
  });

  it('a principal whose cell runs its own agent is left to that agent', () => {
    assert.deepEqual(planSidecarUnits({ services, view: model().view, agentCells: new Set(['c1']) }), []);
  });

  it('a sidecar service of another system is not this system’s to create', () => {
    assert.deepEqual(
      planSidecarUnits({
        services: services.filter((r) => r.path !== '/log'),
        view: model().view,
        agentCells: noAgents,
      }),
      [],
    );
  });
});

describe('system agent plan, stage 3: each sidecar unit has its own LRP pinned to its cell', () => {
  const withSidecar = () => model().sidecar(unitName(web, 1), log);
  const pin = (replace: boolean) => ({
    kind: 'pin-sidecar-lrp',
    process_guid: sidecarUnitGuid(logGuid, 1),
    spec: spec('/log', { subordinate_to: '/web', instances: 1 }),
    cell: 'c1',
    replace,
  });

  it('a placed sidecar unit without its LRP gets one, one instance, on its cell', () => {
    assert.deepEqual(planSidecarLRPs({ services, view: withSidecar().view, desired: [] }), [pin(false)]);
  });

  it('an LRP already pinned to the unit’s cell stays', () => {
    const pinned = desired(sidecarUnitGuid(logGuid, 1), [cellPlacementTag('c1')]);
    assert.deepEqual(planSidecarLRPs({ services, view: withSidecar().view, desired: [pinned] }), []);
  });

  it('an LRP pinned to another cell (its principal moved) is replaced by one beside it', () => {
    const pinned = desired(sidecarUnitGuid(logGuid, 1), [cellPlacementTag('c2')]);
    assert.deepEqual(planSidecarLRPs({ services, view: withSidecar().view, desired: [pinned] }), [pin(true)]);
  });

  it('a Dying sidecar unit gets no LRP', () => {
    const m = withSidecar();
    dyingSidecar(m);
    assert.deepEqual(planSidecarLRPs({ services, view: m.view, desired: [] }), []);
  });
});

describe('system agent plan, stage 4: placed units enter the scopes they fit', () => {
  it('placed Alive units enter their relations’ scopes, in row order; unplaced ones do not', () => {
    assert.deepEqual(planScopeEntries({ services, view: model().view, agentCells: noAgents }), [
      { kind: 'enter-scope', relation: relationId(web, db), unit: unitName(web, 1) },
      { kind: 'enter-scope', relation: relationId(web, log), unit: unitName(web, 1) },
      { kind: 'enter-scope', relation: relationId(web, db), unit: unitName(db, 0) },
    ]);
  });

  it('a unit on a cell with its own agent is left to that agent', () => {
    assert.deepEqual(planScopeEntries({ services, view: model().view, agentCells: new Set(['c1']) }), [
      { kind: 'enter-scope', relation: relationId(web, db), unit: unitName(db, 0) },
    ]);
  });

  it('a unit already in scope enters nothing', () => {
    const m = model()
      .enter(web, db, unitName(web, 1))
      .enter(web, db, unitName(db, 0))
      .enter(web, log, unitName(web, 1));
    assert.deepEqual(planScopeEntries({ services, view: m.view, agentCells: noAgents }), []);
  });
});

describe('system agent plan: after the pass, sidecar LRPs of gone units are removed', () => {
  it('the LRP of a sidecar unit no longer Alive, or gone, is removed; others stay', () => {
    const m = model().sidecar(unitName(web, 1), log);
    const lrps = [
      desired(sidecarUnitGuid(logGuid, 1)),
      desired(sidecarUnitGuid(logGuid, 0)),
      desired(webGuid),
      desired(dbGuid),
    ];
    assert.deepEqual(planSidecarLRPPruning({ services, view: m.view, desired: lrps }), [
      { kind: 'remove-sidecar-lrp', process_guid: sidecarUnitGuid(logGuid, 0) },
    ]);
    dyingSidecar(m);
    assert.deepEqual(
      planSidecarLRPPruning({ services, view: m.view, desired: lrps }).map(
        (a) => a.kind === 'remove-sidecar-lrp' && a.process_guid,
      ),
      [sidecarUnitGuid(logGuid, 1), sidecarUnitGuid(logGuid, 0)],
    );
  });
});

describe('system agent plan: cells that left the cluster are retired once empty', () => {
  it('a cell with no presence and no units is retired; a live one or one with units stays', () => {
    const view = model().cell('c3').view;
    assert.deepEqual(planCellRetirement(view, new Set(['c1'])), [{ kind: 'retire-cell', cell: 'c3' }]);
    assert.deepEqual(planCellRetirement(view, new Set(['c1', 'c2', 'c3'])), []);
  });
});

describe('system agent plan: restore what was changed underneath (issue 19 item 2)', () => {
  /** web at 2 instances, db at 1, as deployed; the model has both of web's units and db's. */
  const asDeployed = () => [{ ...desired(webGuid), instances: 2 }, desired(dbGuid)];

  it('nothing changed: nothing to restore (the sidecar and the job are not its business)', () => {
    assert.deepEqual(planRestore({ services, view: model().view, desired: asDeployed() }), []);
  });

  it("a service's DesiredLRP removed underneath is desired again from its row, at the row's count", () => {
    const [, dbLrp] = asDeployed();
    assert.deepEqual(planRestore({ services, view: model().view, desired: [dbLrp!] }), [
      { kind: 'restore-lrp', process_guid: webGuid, spec: spec('/web') },
    ]);
  });

  it('instances changed underneath (lrp scale) are set back to the row’s count', () => {
    const scaled = [
      { ...desired(webGuid), instances: 5 },
      { ...desired(dbGuid), instances: 0 },
    ];
    assert.deepEqual(planRestore({ services, view: model().view, desired: scaled }), [
      { kind: 'restore-instances', process_guid: webGuid, instances: 2 },
      { kind: 'restore-instances', process_guid: dbGuid, instances: 1 },
    ]);
  });

  it('an Alive service missing the unit of an index it runs gets it back; a Dying one does not', () => {
    const m = new ModelBuilder().service(web).service(db).units(web, 1, [], 1);
    assert.deepEqual(planRestore({ services, view: m.view, desired: asDeployed() }), [
      { kind: 'restore-unit', service: web, index: 0 },
      { kind: 'restore-unit', service: db, index: 0 },
    ]);
    m.apply((v) => destroyService(v, db, now));
    assert.deepEqual(
      planRestore({ services, view: m.view, desired: asDeployed() }).map(
        (a) => a.kind === 'restore-unit' && a.service,
      ),
      [web],
    );
  });

  it('a row mid rolling update belongs to its deploy and is left alone', () => {
    const rolling = services.map((r) => (r.path === '/web' ? { ...r, old_process_guid: 'shop.web.old' } : r));
    assert.deepEqual(planRestore({ services: rolling, view: model().view, desired: [desired(dbGuid)] }), []);
  });
});
