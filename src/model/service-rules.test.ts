import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BerthError } from '../core/index.js';
import { ModelBuilder } from '../testing/model-builder.js';
import { cellAgentStep, unitAgentStep } from './agent-rules.js';
import { cleanupStep, runDueCleanups } from './cleanup-jobs.js';
import { MemoryModelTxnRunner } from './memory-model-txn-runner.js';
import { addRelation, leaveScope } from './relation-rules.js';
import { addService, destroyService } from './service-rules.js';
import { cleanupId, relationId, unitName } from './txn-parts.js';
import { addUnit, destroyUnit, ensureUnitDead } from './unit-rules.js';

const now = new Date('2024-05-01T12:00:00.000Z');

function code(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof BerthError) return err.code;
    throw err;
  }
  return 'none';
}

function killUnit(m: ModelBuilder, unit: string): void {
  m.apply((v) => destroyUnit(v, unit, now));
  m.apply((v) => ensureUnitDead(v, unit));
}

describe('seed 003 Services', () => {
  it('"services are never Dead": the runner refuses the move outright', () => {
    const m = new ModelBuilder().service('web').units('web', 1);
    m.apply((v) => destroyService(v, 'web', now));
    assert.throws(
      () =>
        m.runner.apply({
          rule: 'test',
          asserts: [],
          ops: [{ op: 'set-life', entity: { kind: 'service', id: 'web' }, to: 'dead' }],
        }),
      (err: unknown) => err instanceof BerthError && err.code === 'illegal_transition',
    );
    assert.equal(m.view.service('web')?.life, 'dying');
  });

  it('"When a service is Alive, units may be added to it, and the service\'s endpoints can be added to relations" (and not when Dying)', () => {
    const m = new ModelBuilder().service('web').service('db').units('web', 1);
    m.apply((v) => addUnit(v, 'web', 1));
    m.apply((v) => destroyService(v, 'web', now));
    assert.equal(
      code(() => addUnit(m.view, 'web', 2)),
      'conflict',
    );
    assert.equal(
      code(() => addRelation(m.view, 'web', 'db')),
      'conflict',
    );
  });

  it('an addUnit built while Alive aborts when the service started dying meanwhile', () => {
    const m = new ModelBuilder().service('web').units('web', 1);
    const add = addUnit(m.view, 'web', 1);
    m.apply((v) => destroyService(v, 'web', now));
    assert.throws(
      () => m.runner.apply(add),
      (err: unknown) => err instanceof BerthError && err.retryable,
    );
  });

  it('"A service can become dying at any time ... This causes all the units to become Dying ... and ... all relations ... to become Dying"', async () => {
    const m = new ModelBuilder()
      .service('web')
      .service('db')
      .service('cache')
      .units('web', 3)
      .units('db', 1)
      .relate('web', 'db')
      .relate('web', 'cache')
      .enter('web', 'db', unitName('db', 0));
    m.apply((v) => destroyService(v, 'web', now));
    assert.equal(m.view.service('web')?.life, 'dying');
    assert.ok(
      m.view.cleanup(cleanupId('service-dying', 'web')),
      'the cascade is a cleanup job, not this txn',
    );
    assert.equal(m.view.unit(unitName('web', 0))?.life, 'alive');
    await runDueCleanups(m.runner, { now });
    for (let i = 0; i < 3; i++) assert.equal(m.view.unit(unitName('web', i))?.life, 'dying');
    assert.equal(m.view.relation(relationId('web', 'db'))?.life, 'dying', 'a unit is in scope: Dying');
    assert.equal(m.view.relation(relationId('web', 'cache')), undefined, 'nobody in scope: removed at once');
    assert.equal(m.view.service('cache')?.life, 'alive', 'the other side is not destroyed');
  });

  it('"If no associated units or relations exist when a service is destroyed, the service is removed from state immediately"', () => {
    const m = new ModelBuilder().service('web');
    const t = m.apply((v) => destroyService(v, 'web', now));
    assert.equal(m.view.service('web'), undefined);
    assert.equal(t?.ops.length, 1, 'no cleanup job either');
  });

  it('an immediate removal built on "no units" aborts if a unit was added meanwhile', () => {
    const m = new ModelBuilder().service('web');
    const destroy = destroyService(m.view, 'web', now)!;
    m.apply((v) => addUnit(v, 'web', 0));
    assert.throws(
      () => m.runner.apply(destroy),
      (err: unknown) => err instanceof BerthError && err.code === 'cas_conflict',
    );
    assert.equal(m.view.service('web')?.life, 'alive');
  });

  it('"If no associated relations exist, the service is removed by the MA which removes the last unit"', async () => {
    const m = new ModelBuilder().cell('c1').service('web').units('web', 2, ['c1']);
    m.apply((v) => destroyService(v, 'web', now));
    await runDueCleanups(m.runner, { now });
    killUnit(m, unitName('web', 0));
    m.apply((v) => ensureUnitDead(v, unitName('web', 1)));
    const first = cellAgentStep(m.view, 'c1');
    if (first.kind === 'txn') m.runner.apply(first.txn);
    assert.equal(m.view.service('web')?.life, 'dying', 'one unit left');
    const last = cellAgentStep(m.view, 'c1');
    assert.equal(last.kind, 'txn');
    if (last.kind === 'txn') {
      assert.ok(last.txn.ops.some((o) => o.op === 'remove' && o.entity.kind === 'service'));
      m.runner.apply(last.txn);
    }
    assert.equal(m.view.service('web'), undefined);
  });

  it('"If no units of the service remain, but its relations still exist, ... the last UA to leave scope for that relation" removes it', async () => {
    const m = new ModelBuilder()
      .service('web')
      .service('db')
      .units('web', 1)
      .units('db', 2)
      .relate('web', 'db')
      .enter('web', 'db', unitName('db', 0))
      .enter('web', 'db', unitName('db', 1));
    m.apply((v) => destroyService(v, 'web', now));
    await runDueCleanups(m.runner, { now });
    killUnit(m, unitName('web', 0));
    assert.equal(
      m.step((v) => cellAgentStep(v, null, [unitName('web', 0)])),
      'txn',
    );
    assert.equal(m.view.service('web')?.life, 'dying', 'the relation still references it');
    m.apply((v) => leaveScope(v, relationId('web', 'db'), unitName('db', 0)));
    assert.equal(m.view.service('web')?.life, 'dying');
    // A unit of a totally different service (db) is the last to leave, and removes relation and service.
    m.apply((v) => leaveScope(v, relationId('web', 'db'), unitName('db', 1)));
    assert.equal(m.view.relation(relationId('web', 'db')), undefined);
    assert.equal(m.view.service('web'), undefined);
    assert.equal(m.view.service('db')?.life, 'alive');
  });

  it('a service name cannot be reused until the old service is removed', async () => {
    const m = new ModelBuilder().service('web').units('web', 1);
    m.apply((v) => destroyService(v, 'web', now));
    assert.equal(
      code(() => addService(m.view, 'web')),
      'already_exists',
    );
    await runDueCleanups(m.runner, { now });
    killUnit(m, unitName('web', 0));
    assert.equal(
      m.step((v) => cellAgentStep(v, null, [unitName('web', 0)])),
      'txn',
    );
    assert.equal(m.view.service('web'), undefined);
    m.apply((v) => addService(v, 'web'));
    assert.equal(m.view.service('web')?.life, 'alive');
    assert.deepEqual([...m.view.cleanups()], [], 'no stale job of the old service can touch the new one');
  });

  it('"services have no corresponding agent": nothing but the last reference leaving removes a Dying service', async () => {
    const m = new ModelBuilder().service('web').units('web', 1);
    m.apply((v) => destroyService(v, 'web', now));
    await runDueCleanups(m.runner, { now });
    await runDueCleanups(m.runner, { now: new Date(now.getTime() + 3_600_000) });
    assert.equal(m.view.service('web')?.life, 'dying');
    assert.equal(
      unitAgentStep(m.view, unitName('web', 0), now).kind,
      'txn',
      "the unit's agent is what moves",
    );
  });

  it('destroying a service with many units goes Dying in bounded batches (batch size is a parameter)', async () => {
    const runner = new MemoryModelTxnRunner();
    const m = new ModelBuilder(runner).service('web').units('web', 2_500);
    m.apply((v) => destroyService(v, 'web', now));
    const before = runner.stats().txns;
    const job = m.view.cleanup(cleanupId('service-dying', 'web'))!;
    let steps = 0;
    let largest = 0;
    while (m.view.cleanup(job.id)) {
      const t = cleanupStep(m.view, job, { now, batchSize: 100 });
      largest = Math.max(largest, t.ops.length);
      runner.apply(t);
      steps++;
    }
    assert.equal(steps, 26, '25 batches of 100 and one that ends the job');
    assert.equal(largest, 100, 'one set-life per unit, nothing else');
    assert.equal(runner.stats().txns - before, steps);
    assert.equal(m.view.count('alive-units-of-service', 'web'), 0);
  });
});
