import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BerthError } from '../core/index.js';
import { ModelBuilder } from '../testing/model-builder.js';
import { cellAgentStep, provisionerStep, unitAgentStep } from './agent-rules.js';
import { assignUnitToCell, destroyCell } from './cell-rules.js';
import { runDueCleanups } from './cleanup-jobs.js';
import { settleModel } from './model-settler.js';
import { destroyRelation } from './relation-rules.js';
import { destroyService } from './service-rules.js';
import { relationId, unitName } from './txn-parts.js';
import { destroyUnit, ensureUnitDead } from './unit-rules.js';

const now = new Date('2024-05-01T12:00:00.000Z');
const web0 = unitName('web', 0);
const log0 = unitName('log', 0);

function refused(
  m: ModelBuilder,
  op: { op: 'remove'; entity: { kind: 'cell' | 'unit' | 'service' | 'relation'; id: string } },
): void {
  assert.throws(
    () => m.runner.apply({ rule: 'test', asserts: [], ops: [op] }),
    (err: unknown) =>
      err instanceof BerthError && (err.code === 'internal' || err.code === 'illegal_transition'),
  );
}

function system(): ModelBuilder {
  return new ModelBuilder()
    .cell('c1')
    .service('web')
    .service('db')
    .service('log', true)
    .units('web', 1, ['c1'])
    .units('db', 1, ['c1'])
    .relate('web', 'db')
    .relate('web', 'log', 'container')
    .sidecar(web0, 'log')
    .enter('web', 'db', web0)
    .enter('web', 'db', unitName('db', 0))
    .enter('web', 'log', web0)
    .enter('web', 'log', log0);
}

describe('seed 003 References ("where X references Y, the life state of an X may be sufficient to prevent a change in ... Y")', () => {
  it('"Subordinate units reference principal units": a principal with a sidecar cannot be removed or Dead', () => {
    const m = system();
    m.apply((v) => destroyUnit(v, web0, now));
    assert.throws(() => ensureUnitDead(m.view, web0), /subordinate|scope/);
    refused(m, { op: 'remove', entity: { kind: 'unit', id: web0 } });
  });

  it('"Principal units reference machines": a cell with principals cannot die or be removed', () => {
    const m = system();
    assert.throws(() => destroyCell(m.view, 'c1'), /unit/);
    refused(m, { op: 'remove', entity: { kind: 'cell', id: 'c1' } });
  });

  it('"All units reference their services": a service with units is not removed', () => {
    const m = system();
    refused(m, { op: 'remove', entity: { kind: 'service', id: 'db' } });
  });

  it('"All units reference the relations whose scopes they have joined": a relation with units in scope is Dying, not removed', () => {
    const m = system();
    m.apply((v) => destroyRelation(v, relationId('web', 'db'), now));
    assert.equal(m.view.relation(relationId('web', 'db'))?.life, 'dying');
    refused(m, { op: 'remove', entity: { kind: 'relation', id: relationId('web', 'db') } });
  });

  it('"All relations reference the services they are part of": a service in a relation is Dying, not removed', () => {
    const m = new ModelBuilder().service('web').service('db').relate('web', 'db');
    refused(m, { op: 'remove', entity: { kind: 'service', id: 'db' } });
  });

  it('user view: "destroying a principal destroys all its subordinates"', async () => {
    const m = system();
    m.apply((v) => destroyUnit(v, web0, now));
    await runDueCleanups(m.runner, { now });
    assert.equal(m.view.unit(log0)?.life, 'dying');
  });

  it('user view: "destroying a service destroys all its units and relations", and settling removes all of it', async () => {
    const m = system();
    m.apply((v) => destroyService(v, 'web', now));
    const report = await settleModel(m.runner, { now });
    assert.deepEqual(report.errors, []);
    assert.equal(m.view.service('web'), undefined);
    assert.equal(m.view.unit(web0), undefined);
    assert.equal(m.view.unit(log0), undefined);
    assert.equal(m.view.relation(relationId('web', 'db')), undefined);
    assert.equal(m.view.relation(relationId('web', 'log')), undefined);
    assert.equal(
      m.view.service('log')?.life,
      'alive',
      'the sidecar service itself stays (it was not destroyed)',
    );
    assert.equal(m.view.unit(unitName('db', 0))?.life, 'alive', "the other side's units stay");
  });

  it('user view: "destroying a container relation destroys all subordinates in the relation"', async () => {
    const m = system();
    m.apply((v) => destroyRelation(v, relationId('web', 'log'), now));
    await settleModel(m.runner, { now });
    assert.equal(m.view.unit(log0), undefined);
    assert.equal(m.view.relation(relationId('web', 'log')), undefined);
    assert.equal(m.view.unit(web0)?.life, 'alive');
  });

  it('user view: "(destroying a global relation destroys nothing else)"', async () => {
    const m = system();
    m.apply((v) => destroyRelation(v, relationId('web', 'db'), now));
    await settleModel(m.runner, { now });
    assert.equal(m.view.relation(relationId('web', 'db')), undefined);
    for (const u of [web0, log0, unitName('db', 0)]) assert.equal(m.view.unit(u)?.life, 'alive');
  });
});

describe('seed 003 Agents (berth: the rep of each cell)', () => {
  it('UA: "detecting its service\'s Dying state, and setting its own Dying state"', () => {
    const m = system();
    m.apply((v) => destroyService(v, 'db', now));
    assert.equal(
      m.step((v) => unitAgentStep(v, unitName('db', 0), now)),
      'txn',
    );
    assert.equal(m.view.unit(unitName('db', 0))?.life, 'dying');
  });

  it('UA, Dying: leaves scopes (possibly removing relations and their services), removes Dead subordinates, then sets Dead', async () => {
    const m = system();
    m.apply((v) => destroyService(v, 'db', now));
    await runDueCleanups(m.runner, { now });
    // db#0 leaves the Dying relation; web#0 is still in it, so it stays.
    assert.equal(
      m.step((v) => unitAgentStep(v, unitName('db', 0), now)),
      'txn',
    );
    assert.equal(m.view.relation(relationId('web', 'db'))?.life, 'dying');
    assert.equal(
      m.step((v) => unitAgentStep(v, unitName('db', 0), now)),
      'txn',
    );
    assert.equal(m.view.unit(unitName('db', 0))?.life, 'dead');
    assert.equal(
      m.step((v) => cellAgentStep(v, 'c1')),
      'txn',
      'MA removes the Dead principal',
    );
    assert.equal(m.view.service('db')?.life, 'dying', 'the relation still holds it');
    // web#0 (Alive, another service) is the last one out of the Dying relation: relation and db go.
    assert.equal(
      m.step((v) => unitAgentStep(v, web0, now)),
      'txn',
    );
    assert.equal(m.view.relation(relationId('web', 'db')), undefined);
    assert.equal(m.view.service('db'), undefined);
  });

  it('MA: removes Dead principals, sets its Dying cell Dead; PA removes the Dead cell', async () => {
    const m = system();
    m.apply((v) => destroyService(v, 'web', now));
    m.apply((v) => destroyService(v, 'db', now));
    await settleModel(m.runner, { now });
    assert.equal(m.view.count('units-on-cell', 'c1'), 0);
    m.apply((v) => destroyCell(v, 'c1'));
    assert.equal(
      m.step((v) => cellAgentStep(v, 'c1')),
      'txn',
    );
    assert.equal(m.view.cell('c1')?.life, 'dead');
    assert.equal(
      m.step((v) => provisionerStep(v, 'c1')),
      'txn',
    );
    assert.equal(m.view.cell('c1'), undefined);
  });

  it('UA ("the easy side"): an Alive unit enters the scopes of its Alive relations once on its cell', () => {
    const m = new ModelBuilder().cell('c1').service('web').service('db').units('web', 1).relate('web', 'db');
    // Issue 19 item 10: a UA runs on its unit's machine; an unassigned unit has none yet.
    assert.equal(
      m.step((v) => unitAgentStep(v, web0, now)),
      'idle',
    );
    assert.ok(!m.view.isInScope(relationId('web', 'db'), web0));
    m.apply((v) => assignUnitToCell(v, web0, 'c1'));
    assert.equal(
      m.step((v) => unitAgentStep(v, web0, now)),
      'txn',
    );
    assert.ok(m.view.isInScope(relationId('web', 'db'), web0));
    assert.equal(
      m.step((v) => unitAgentStep(v, web0, now)),
      'idle',
    );
  });
});
