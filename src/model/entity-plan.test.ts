import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { openBbsStore, type SqlBbsStore } from '../bbs/index.js';
import { BerthError } from '../core/index.js';
import { addCell, assignUnitToCell } from './cell-rules.js';
import { runDueCleanups } from './cleanup-jobs.js';
import { forcedCellSkips, forcedUnitSkips, precheckEntityRequest } from './entity-plan.js';
import type { EntityRequest } from './entity-requests.js';
import { modelServiceName, serviceProcessGuid, unitName } from './instance-names.js';
import { MemoryModelTxnRunner } from './memory-model-txn-runner.js';
import { type ModelTxnRunner, runTxn } from './model-txn-runner.js';
import type { ModelTxn, ModelView } from './model-types.js';
import { addRelation, enterScope } from './relation-rules.js';
import { addService } from './service-rules.js';
import { addSidecarUnit } from './sidecar-rules.js';
import { SqlModelTxnRunner } from './sql-model-txn-runner.js';
import type { ServiceDefinition } from './system-definition.js';
import type { SystemServiceRecord } from './system-service-record.js';
import { relationId } from './txn-parts.js';
import { addUnit, forceDestroyUnit } from './unit-rules.js';

// The per-entity commands' checks and --force descriptions against the seed-003 rules, on the
// memory runner (the reference) and on SQLite: the same fixture built through the rules on each.
const now = new Date('2026-11-25T12:00:00.000Z');
const web = modelServiceName('shop', '/web');
const db = modelServiceName('shop', '/db');
const log = modelServiceName('shop', '/log');

function spec(path: string, over: Partial<ServiceDefinition> = {}): ServiceDefinition {
  return {
    path,
    image: 'bb:1',
    env: {},
    instances: 1,
    ports: [],
    memory_mb: 32,
    disk_mb: 64,
    routes: {},
    annotation: '',
    relations: [],
    ...over,
  };
}

const rows: SystemServiceRecord[] = [
  ['/web', web, {}],
  ['/db', db, {}],
  ['/log', log, { subordinate_to: '/web' }],
].map(([path, name, over]) => ({
  system: 'shop',
  path: path as string,
  kind: 'service' as const,
  model_name: name as string,
  version: 'v1',
  spec: spec(path as string, over as Partial<ServiceDefinition>),
  process_guid: serviceProcessGuid('shop', path as string, 'v1'),
  old_process_guid: null,
}));

/** web#0 on c1 with its sidecar log#0, db#0 on c2, web–db with both in scope; c3 empty. */
async function fixture(runner: ModelTxnRunner): Promise<void> {
  const steps: ((v: ModelView) => ModelTxn | null)[] = [
    (v) => addCell(v, 'c1'),
    (v) => addCell(v, 'c2'),
    (v) => addCell(v, 'c3'),
    (v) => addService(v, web),
    (v) => addService(v, db),
    (v) => addService(v, log, { subordinate: true }),
    (v) => addUnit(v, web, 0),
    (v) => addUnit(v, db, 0),
    (v) => assignUnitToCell(v, unitName(web, 0), 'c1'),
    (v) => assignUnitToCell(v, unitName(db, 0), 'c2'),
    (v) => addRelation(v, web, db, 'global'),
    (v) => addRelation(v, web, log, 'container'),
    (v) => addSidecarUnit(v, unitName(web, 0), log),
    (v) => enterScope(v, relationId(web, db), unitName(web, 0)),
    (v) => enterScope(v, relationId(web, db), unitName(db, 0)),
    (v) => enterScope(v, relationId(web, log), unitName(web, 0)),
    (v) => enterScope(v, relationId(web, log), unitName(log, 0)),
  ];
  for (const step of steps) await runTxn(runner, step);
}

function refusedWith(view: ModelView, request: EntityRequest, code: string, message: RegExp): void {
  assert.throws(
    () => precheckEntityRequest(view, rows, request, now),
    (err: unknown) => err instanceof BerthError && err.code === code && message.test(err.message),
    `${request.kind} refused with ${code}`,
  );
}

const stores: SqlBbsStore[] = [];
after(async () => {
  for (const s of stores) await s.close();
});

const runners: [string, () => Promise<ModelTxnRunner>][] = [
  ['memory', async () => new MemoryModelTxnRunner()],
  [
    'SQLite',
    async () => {
      const store = await openBbsStore(':memory:');
      stores.push(store);
      return SqlModelTxnRunner.open(store.backend, now);
    },
  ],
];

for (const [name, open] of runners) {
  describe(`per-entity commands against the seed-003 rules (${name})`, () => {
    it('accepted as the rules allow: destroy a principal unit, scale, destroy a service, relate, remove a global relation, destroy an empty cell', async () => {
      const runner = await open();
      await fixture(runner);
      const view = await runner.read();
      const ok: EntityRequest[] = [
        { kind: 'unit-destroy', path: '/web', index: 0, force: false },
        { kind: 'unit-destroy', path: '/web', index: 0, force: true },
        { kind: 'service-scale', path: '/web', instances: 3 },
        { kind: 'service-destroy', path: '/db', force: false },
        { kind: 'relation-remove', a: '/web', b: '/db' },
        { kind: 'cell-destroy', cell: 'c3', force: false },
        { kind: 'cell-destroy', cell: 'c1', force: true },
      ];
      for (const request of ok) precheckEntityRequest(view, rows, request, now);
    });

    it('refused as the rules refuse, naming why', async () => {
      const runner = await open();
      await fixture(runner);
      const view = await runner.read();
      // Seed 003 References: "destroying a subordinate directly is impossible".
      refusedWith(
        view,
        { kind: 'unit-destroy', path: '/log', index: 0, force: false },
        'conflict',
        /sidecar of shop:\/web#0/,
      );
      refusedWith(
        view,
        { kind: 'unit-destroy', path: '/log', index: 0, force: true },
        'conflict',
        /destroy the principal/,
      );
      refusedWith(
        view,
        { kind: 'unit-destroy', path: '/web', index: 7, force: false },
        'not_found',
        /\/web\/7/,
      );
      refusedWith(view, { kind: 'service-scale', path: '/log', instances: 2 }, 'conflict', /sidecar/);
      refusedWith(view, { kind: 'service-destroy', path: '/nope', force: false }, 'not_found', /nope/);
      // A name cannot be reused until the old entity is removed: the relation exists.
      refusedWith(
        view,
        { kind: 'relation-add', a: '/db', b: '/web' },
        'already_exists',
        /shop:\/db shop:\/web/,
      );
      refusedWith(
        view,
        { kind: 'relation-remove', a: '/web', b: '/log' },
        'conflict',
        /destroy the sidecar service/,
      );
      // Seed 003 Machines: "will fail when units are assigned".
      refusedWith(
        view,
        { kind: 'cell-destroy', cell: 'c1', force: false },
        'conflict',
        /2 unit\(s\) are assigned/,
      );
      refusedWith(view, { kind: 'cell-destroy', cell: 'c9', force: true }, 'not_found', /c9/);
    });

    it('--force says what it does in the agents’ place, and then does it: scopes, sidecar, Dead, removed', async () => {
      const runner = await open();
      await fixture(runner);
      const view = await runner.read();
      const said = forcedUnitSkips(view, unitName(web, 0));
      assert.match(said, /did not wait for its unit agent on cell c1/);
      assert.match(
        said,
        /departing 2 relation scope\(s\) \(shop:\/db <-> shop:\/web, shop:\/log <-> shop:\/web\)/,
      );
      assert.match(said, /destroying its sidecar unit\(s\) shop:\/log#0/);
      assert.match(
        forcedCellSkips(view, 'c1'),
        /forced 1 unit\(s\) off it \(shop:\/web#0\); did not wait for the machine agent of cell c1/,
      );
      await runTxn(runner, (v) => forceDestroyUnit(v, unitName(web, 0), now));
      const report = await runDueCleanups(runner, { now });
      assert.deepEqual(report.errors, []);
      const after = await runner.read();
      assert.equal(after.unit(unitName(web, 0)), undefined);
      assert.equal(after.unit(unitName(log, 0)), undefined);
      assert.deepEqual([...after.unitsInScope(relationId(web, db))], [unitName(db, 0)]);
      assert.equal(after.count('units-on-cell', 'c1'), 0);
    });
  });
}
