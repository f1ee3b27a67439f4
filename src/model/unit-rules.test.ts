import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BerthError } from '../core/index.js';
import { ModelBuilder } from '../testing/model-builder.js';
import { type AgentStep, cellAgentStep, unitAgentStep } from './agent-rules.js';
import { cleanupStep, runDueCleanups } from './cleanup-jobs.js';
import { TxnAbortedError } from './model-errors.js';
import { leaveScope } from './relation-rules.js';
import { destroyService } from './service-rules.js';
import { addSidecarUnit } from './sidecar-rules.js';
import { cleanupId, relationId, unitName } from './txn-parts.js';
import {
  addUnit,
  destroyUnit,
  ensureUnitDead,
  forceDestroyUnit,
  removeUnit,
  unitDyingForService,
} from './unit-rules.js';

const now = new Date('2024-05-01T12:00:00.000Z');
const web0 = unitName('web', 0);
const log0 = unitName('log', 0);

function code(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof BerthError) return err.code;
    throw err;
  }
  return 'none';
}

/** web#0 on c1 with sidecar log#0, related to db (db#0 on c1), both in scope. */
function withSidecar(): ModelBuilder {
  return new ModelBuilder()
    .cell('c1')
    .service('web')
    .service('db')
    .service('log', true)
    .units('web', 1, ['c1'])
    .units('db', 1, ['c1'])
    .relate('web', 'log', 'container')
    .relate('web', 'db')
    .sidecar(web0, 'log')
    .enter('web', 'db', web0)
    .enter('web', 'db', unitName('db', 0))
    .enter('web', 'log', web0)
    .enter('web', 'log', log0);
}

function applyStep(m: ModelBuilder, s: AgentStep): void {
  assert.equal(s.kind, 'txn', JSON.stringify(s));
  if (s.kind === 'txn') m.runner.apply(s.txn);
}

describe('seed 003 Units', () => {
  it('"While a principal unit is alive, it can be assigned to machines and can have subordinate units added"', () => {
    const m = withSidecar();
    assert.equal(m.view.unit(log0)?.principal, web0);
    assert.equal(m.view.unit(log0)?.cell_id, 'c1', "the sidecar is on its principal's cell");
    m.apply((v) => addUnit(v, 'web', 1));
    m.apply((v) => destroyUnit(v, unitName('web', 1), now));
    assert.equal(
      code(() => addSidecarUnit(m.view, unitName('web', 1), 'log')),
      'conflict',
      'not once Dying',
    );
  });

  it('"A unit can become Dying at any time": assigned or not, in scope or not', () => {
    const m = withSidecar().units('web', 1, [], 1);
    m.apply((v) => destroyUnit(v, unitName('web', 1), now));
    m.apply((v) => destroyUnit(v, web0, now));
    assert.equal(m.view.unit(unitName('web', 1))?.life, 'dying');
    assert.equal(m.view.unit(web0)?.life, 'dying');
    assert.equal(destroyUnit(m.view, web0, now), null, 'destroying a Dying unit changes nothing');
  });

  it('"... but may not become Dead while any unit subordinate to it exists"', () => {
    const m = withSidecar();
    m.apply((v) => destroyUnit(v, web0, now));
    for (const scope of [...m.view.scopesOfUnit(web0)]) m.apply((v) => leaveScope(v, scope, web0));
    assert.equal(m.view.count('scopes-of-unit', web0), 0);
    assert.throws(
      () => ensureUnitDead(m.view, web0),
      (err: unknown) =>
        err instanceof BerthError && err.code === 'conflict' && /subordinate/.test(err.message),
    );
  });

  it('"... or when the unit is in scope for any relation"', () => {
    const m = new ModelBuilder()
      .service('web')
      .service('db')
      .units('web', 1)
      .relate('web', 'db')
      .enter('web', 'db', web0);
    m.apply((v) => destroyUnit(v, web0, now));
    assert.throws(
      () => ensureUnitDead(m.view, web0),
      (err: unknown) => err instanceof BerthError && err.code === 'conflict' && /in scope/.test(err.message),
    );
  });

  it('setting Dead asserts the unit is Dying: an Alive unit is refused, a replayed txn aborts', () => {
    const m = new ModelBuilder().service('web').units('web', 1);
    assert.equal(
      code(() => ensureUnitDead(m.view, web0)),
      'conflict',
      'an Alive unit must be destroyed first',
    );
    m.apply((v) => destroyUnit(v, web0, now));
    const dead = ensureUnitDead(m.view, web0)!;
    m.runner.apply(dead);
    assert.throws(() => m.runner.apply(dead), TxnAbortedError, 'replaying it finds the unit no longer Dying');
  });

  it('"A unit can become Dying ... via juju destroy-service": the UA sees its service Dying and sets itself Dying', () => {
    const m = new ModelBuilder().service('web').units('web', 2);
    assert.equal(unitDyingForService(m.view, web0, now), null, 'service Alive: nothing to do');
    m.apply((v) => destroyService(v, 'web', now));
    applyStep(m, unitAgentStep(m.view, web0, now));
    assert.equal(m.view.unit(web0)?.life, 'dying');
    assert.equal(m.view.unit(unitName('web', 1))?.life, 'alive', 'one unit per transaction, no bulk update');
  });

  it('the UA and the batched cleanup race safely: the loser aborts and rebuilds', () => {
    const m = new ModelBuilder().service('web').units('web', 3);
    m.apply((v) => destroyService(v, 'web', now));
    const job = m.view.cleanup(cleanupId('service-dying', 'web'))!;
    const batch = cleanupStep(m.view, job, { now, batchSize: 10 });
    applyStep(m, unitAgentStep(m.view, web0, now));
    assert.throws(() => m.runner.apply(batch), TxnAbortedError);
    m.runner.apply(cleanupStep(m.view, job, { now, batchSize: 10 }));
    assert.deepEqual([...m.view.unitsOfService('web', 'alive')], []);
  });

  it('"When a principal unit becomes Dying, all its subordinates must also become Dying"', async () => {
    const m = withSidecar();
    m.apply((v) => destroyUnit(v, web0, now));
    assert.ok(
      m.view.cleanup(cleanupId('unit-dying', web0)),
      'a cleanup job is written beside the life change',
    );
    assert.equal(m.view.unit(log0)?.life, 'alive', 'not in the same transaction');
    const report = await runDueCleanups(m.runner, { now });
    assert.deepEqual(report.errors, []);
    assert.equal(m.view.unit(log0)?.life, 'dying');
    assert.equal(m.view.cleanup(cleanupId('unit-dying', web0)), undefined, 'the job ends when done');
  });

  it('a principal without sidecars writes no cleanup job (it asserts there are none)', () => {
    const m = new ModelBuilder().service('web').units('web', 1);
    m.apply((v) => destroyUnit(v, web0, now));
    assert.deepEqual([...m.view.cleanups()], []);
  });

  it('"When a unit is Dying, its UA ... Depart from all its relations ..., Wait for all its subordinates to become Dead, and remove them ..., Set its unit to Dead"', async () => {
    const m = withSidecar();
    m.apply((v) => destroyUnit(v, web0, now));
    await runDueCleanups(m.runner, { now });
    // The principal departs both relations first.
    applyStep(m, unitAgentStep(m.view, web0, now));
    applyStep(m, unitAgentStep(m.view, web0, now));
    assert.equal(m.view.count('scopes-of-unit', web0), 0);
    const waiting = unitAgentStep(m.view, web0, now);
    assert.equal(waiting.kind, 'wait', 'the sidecar is not Dead yet');
    // The sidecar's own UA departs the container scope and sets itself Dead.
    applyStep(m, unitAgentStep(m.view, log0, now));
    applyStep(m, unitAgentStep(m.view, log0, now));
    assert.equal(m.view.unit(log0)?.life, 'dead');
    assert.equal(unitAgentStep(m.view, log0, now).kind, 'idle', 'a Dead unit does not remove itself');
    // "when a subordinate unit is Dead, it is removed from state by its principal's UA"
    applyStep(m, unitAgentStep(m.view, web0, now));
    assert.equal(m.view.unit(log0), undefined);
    applyStep(m, unitAgentStep(m.view, web0, now));
    assert.equal(m.view.unit(web0)?.life, 'dead');
    // "when a principal unit is Dead, it is removed from state by the MA of the machine"
    assert.equal(unitAgentStep(m.view, web0, now).kind, 'idle');
    applyStep(m, cellAgentStep(m.view, 'c1'));
    assert.equal(m.view.unit(web0), undefined);
  });

  it('removeUnit refuses a unit that is not Dead', () => {
    const m = new ModelBuilder().service('web').units('web', 1);
    assert.equal(
      code(() => removeUnit(m.view, web0)),
      'conflict',
    );
  });

  it('a unit name cannot be reused until the old unit is removed', () => {
    const m = new ModelBuilder().service('web').units('web', 1);
    m.apply((v) => destroyUnit(v, web0, now));
    assert.equal(
      code(() => addUnit(m.view, 'web', 0)),
      'already_exists',
    );
    m.apply((v) => ensureUnitDead(v, web0));
    m.apply((v) => removeUnit(v, web0));
    m.apply((v) => addUnit(v, 'web', 0));
    assert.equal(m.view.unit(web0)?.life, 'alive');
  });

  it('"(Future plans: juju destroy-unit --force, which will clean up a unit and all its subordinates and relations.)"', async () => {
    const m = withSidecar();
    m.apply((v) => forceDestroyUnit(v, web0, now, 60_000));
    const backstop = m.view.cleanup(cleanupId('force-unit', web0, true));
    assert.equal(backstop?.due_at, '2024-05-01T12:01:00.000Z', 'a backstop at now + max-wait');
    assert.equal(m.view.unit(web0)?.life, 'dying');
    const report = await runDueCleanups(m.runner, { now });
    assert.deepEqual(report.errors, []);
    assert.equal(m.view.unit(web0), undefined, 'removed without any agent');
    assert.equal(m.view.unit(log0), undefined, 'its sidecar too');
    assert.equal(m.view.count('scope-of-relation', relationId('web', 'db')), 1, 'db#0 is still in scope');
    assert.equal(m.view.count('scope-of-relation', relationId('web', 'log')), 0);
    assert.deepEqual([...m.view.cleanups()], [], 'the backstop went with the unit');
    assert.ok(report.txns <= 8, `one entity per transaction (${report.txns})`);
  });

  it('forced destruction removes Dying relations and a Dying service on the far side as the last one out', async () => {
    const m = new ModelBuilder()
      .service('web')
      .service('db')
      .units('web', 1)
      .relate('web', 'db')
      .enter('web', 'db', web0);
    m.apply((v) => destroyService(v, 'db', now));
    await runDueCleanups(m.runner, { now });
    assert.equal(m.view.service('db')?.life, 'dying', 'kept alive by the relation web#0 is in');
    m.apply((v) => forceDestroyUnit(v, web0, now));
    await runDueCleanups(m.runner, { now });
    assert.equal(m.view.relation(relationId('web', 'db')), undefined);
    assert.equal(m.view.service('db'), undefined);
    assert.equal(m.view.service('web')?.life, 'alive');
  });

  it('the backstop is idempotent: running it after the unit is gone only removes itself', async () => {
    const m = new ModelBuilder().service('web').units('web', 1);
    m.apply((v) => forceDestroyUnit(v, web0, now, 60_000));
    // Only the immediate job is due; a crash after its first step leaves the rest for the backstop.
    const job = m.view.cleanup(cleanupId('force-unit', web0))!;
    m.runner.apply(cleanupStep(m.view, job, { now }));
    assert.equal(m.view.unit(web0)?.life, 'dead');
    const later = new Date(now.getTime() + 60_000);
    const report = await runDueCleanups(m.runner, { now: later });
    assert.deepEqual(report.errors, []);
    assert.equal(m.view.unit(web0), undefined);
    assert.deepEqual([...m.view.cleanups()], []);
  });
});
