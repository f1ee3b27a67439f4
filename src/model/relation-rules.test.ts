import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BerthError } from '../core/index.js';
import { ModelBuilder } from '../testing/model-builder.js';
import { unitAgentStep } from './agent-rules.js';
import { runDueCleanups } from './cleanup-jobs.js';
import { TxnAbortedError } from './model-errors.js';
import {
  addRelation,
  destroyRelation,
  enterScope,
  leaveScope,
  scopePeers,
  scopesToEnter,
} from './relation-rules.js';
import { destroyService } from './service-rules.js';
import { relationId, unitName } from './txn-parts.js';
import { destroyUnit, ensureUnitDead, removeUnit } from './unit-rules.js';

const now = new Date('2024-05-01T12:00:00.000Z');
const rel = relationId('web', 'db');
const web0 = unitName('web', 0);
const db0 = unitName('db', 0);
const db1 = unitName('db', 1);

function code(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof BerthError) return err.code;
    throw err;
  }
  return 'none';
}

function related(): ModelBuilder {
  return new ModelBuilder().service('web').service('db').units('web', 1).units('db', 2).relate('web', 'db');
}

describe('seed 003 Relations', () => {
  it('"A relation, like a service, has no corresponding agent and cannot be Dead"', () => {
    const m = related();
    assert.throws(
      () =>
        m.runner.apply({
          rule: 't',
          asserts: [],
          ops: [{ op: 'set-life', entity: { kind: 'relation', id: rel }, to: 'dead' }],
        }),
      (err: unknown) => err instanceof BerthError && err.code === 'illegal_transition',
    );
  });

  it('"While a relation is Alive, units of services in that relation can enter its scope"', () => {
    const m = related().service('other').units('other', 1);
    assert.deepEqual(scopesToEnter(m.view, web0), [rel]);
    m.apply((v) => enterScope(v, rel, web0));
    assert.ok(m.view.isInScope(rel, web0));
    assert.equal(enterScope(m.view, rel, web0), null, 'entering twice changes nothing');
    assert.equal(
      code(() => enterScope(m.view, rel, unitName('other', 0))),
      'conflict',
      'not a unit of an endpoint',
    );
    m.apply((v) => enterScope(v, rel, db0));
    m.apply((v) => destroyRelation(v, rel, now));
    assert.equal(
      code(() => enterScope(m.view, rel, db1)),
      'conflict',
      'not once Dying',
    );
  });

  it('an enter built while Alive aborts if the relation started dying meanwhile', () => {
    const m = related().enter('web', 'db', web0);
    const enter = enterScope(m.view, rel, db0)!;
    m.apply((v) => destroyRelation(v, rel, now));
    assert.throws(() => m.runner.apply(enter), TxnAbortedError);
  });

  it('"A relation can become Dying via either juju destroy-relation or juju destroy-service"', async () => {
    const a = related().enter('web', 'db', web0);
    a.apply((v) => destroyRelation(v, rel, now));
    assert.equal(a.view.relation(rel)?.life, 'dying');
    assert.equal(destroyRelation(a.view, rel, now), null, 'again: nothing to do');
    const b = related().enter('web', 'db', web0);
    b.apply((v) => destroyService(v, 'db', now));
    await runDueCleanups(b.runner, { now });
    assert.equal(b.view.relation(rel)?.life, 'dying');
  });

  it('"When a relation is destroyed with no units in scope, it will be removed from state immediately"', () => {
    const m = related();
    m.apply((v) => destroyRelation(v, rel, now));
    assert.equal(m.view.relation(rel), undefined);
  });

  it('an immediate removal built on an empty scope aborts if a unit entered meanwhile', () => {
    const m = related();
    const destroy = destroyRelation(m.view, rel, now)!;
    m.apply((v) => enterScope(v, rel, web0));
    assert.throws(() => m.runner.apply(destroy), TxnAbortedError);
    assert.equal(m.view.relation(rel)?.life, 'alive');
  });

  it('"When a relation becomes Dying, the UAs of units that have entered its scope are responsible for cleanly departing"', () => {
    const m = related().enter('web', 'db', web0).enter('web', 'db', db0);
    m.apply((v) => destroyRelation(v, rel, now));
    assert.equal(
      m.step((v) => unitAgentStep(v, web0, now)),
      'txn',
    );
    assert.equal(m.view.isInScope(rel, web0), false, 'an Alive unit departs a Dying relation');
    assert.equal(
      m.view.unit(web0)?.life,
      'alive',
      'and stays Alive: a global relation destroys nothing else',
    );
  });

  it('"When the last unit leaves the scope of a Dying relation, it must remove the relation from state"', () => {
    const m = related().enter('web', 'db', web0).enter('web', 'db', db0);
    m.apply((v) => destroyRelation(v, rel, now));
    m.apply((v) => leaveScope(v, rel, web0));
    assert.equal(m.view.relation(rel)?.life, 'dying');
    m.apply((v) => leaveScope(v, rel, db0));
    assert.equal(m.view.relation(rel), undefined);
  });

  it('two units leaving at once from views built together: the second aborts and then removes the relation', () => {
    const m = related().enter('web', 'db', web0).enter('web', 'db', db0);
    m.apply((v) => destroyRelation(v, rel, now));
    const a = leaveScope(m.view, rel, web0)!;
    const b = leaveScope(m.view, rel, db0)!;
    m.runner.apply(a);
    assert.throws(() => m.runner.apply(b), TxnAbortedError, 'b was built on "not the last one out"');
    m.apply((v) => leaveScope(v, rel, db0));
    assert.equal(m.view.relation(rel), undefined, 'nobody forgets to remove it');
  });

  it('"the Dying relation may be the only thing keeping a Dying service ... from removal; so, relation removal may also imply service removal"', async () => {
    const m = related().enter('web', 'db', db0);
    m.apply((v) => destroyService(v, 'web', now));
    await runDueCleanups(m.runner, { now });
    m.apply((v) => destroyUnit(v, web0, now));
    m.apply((v) => ensureUnitDead(v, web0));
    m.apply((v) => removeUnit(v, web0));
    assert.equal(m.view.service('web')?.life, 'dying');
    m.apply((v) => leaveScope(v, rel, db0));
    assert.equal(m.view.relation(rel), undefined);
    assert.equal(m.view.service('web'), undefined);
  });

  it('a relation between the same services cannot be created again until the old one is removed', () => {
    const m = related().enter('web', 'db', web0);
    m.apply((v) => destroyRelation(v, rel, now));
    assert.equal(
      code(() => addRelation(m.view, 'db', 'web')),
      'already_exists',
    );
    m.apply((v) => leaveScope(v, rel, web0));
    m.apply((v) => addRelation(v, 'db', 'web'));
    assert.equal(m.view.relation(rel)?.life, 'alive');
  });

  it("global scope: each unit sees the units of the other service in scope, not its own service's", () => {
    const m = related()
      .units('web', 1, [], 1)
      .enter('web', 'db', web0)
      .enter('web', 'db', unitName('web', 1))
      .enter('web', 'db', db0);
    assert.deepEqual(scopePeers(m.view, rel, web0), [db0]);
    assert.deepEqual(scopePeers(m.view, rel, db0), [web0, unitName('web', 1)].sort());
    assert.deepEqual(scopePeers(m.view, rel, db1), [], 'not in scope: sees nothing');
  });

  it('container scope pairs a principal with its own sidecar only', () => {
    const m = new ModelBuilder()
      .cell('c1')
      .service('web')
      .service('log', true)
      .units('web', 2, ['c1'])
      .relate('web', 'log', 'container')
      .sidecar(web0, 'log')
      .sidecar(unitName('web', 1), 'log');
    const crel = relationId('web', 'log');
    for (const u of [web0, unitName('web', 1), unitName('log', 0), unitName('log', 1)])
      m.apply((v) => enterScope(v, crel, u));
    assert.deepEqual(scopePeers(m.view, crel, web0), [unitName('log', 0)]);
    assert.deepEqual(scopePeers(m.view, crel, unitName('log', 1)), [unitName('web', 1)]);
  });

  it('a container relation needs a sidecar service on the second endpoint, and one principal service per sidecar service', () => {
    const m = new ModelBuilder().service('web').service('api').service('log', true);
    assert.equal(
      code(() => addRelation(m.view, 'web', 'api', 'container')),
      'conflict',
    );
    assert.equal(
      code(() => addRelation(m.view, 'log', 'web', 'container')),
      'conflict',
    );
    m.apply((v) => addRelation(v, 'web', 'log', 'container'));
    assert.equal(
      code(() => addRelation(m.view, 'api', 'log', 'container')),
      'conflict',
    );
    assert.equal(
      code(() => addRelation(m.view, 'web', 'web')),
      'invalid_argument',
    );
  });
});
