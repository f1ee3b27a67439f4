import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BerthError } from '../core/index.js';
import { ModelBuilder } from '../testing/model-builder.js';
import { unitAgentStep } from './agent-rules.js';
import { runDueCleanups } from './cleanup-jobs.js';
import { destroyRelation } from './relation-rules.js';
import { addSidecarUnit, destroySidecarUnit, sidecarsToCreate, sidecarsToDestroy } from './sidecar-rules.js';
import { relationId, unitName } from './txn-parts.js';
import { addUnit, destroyUnit } from './unit-rules.js';

const now = new Date('2024-05-01T12:00:00.000Z');
const web = (i: number) => unitName('web', i);
const log = (i: number) => unitName('log', i);

function code(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof BerthError) return err.code;
    throw err;
  }
  return 'none';
}

function base(): ModelBuilder {
  return new ModelBuilder()
    .cell('c1')
    .cell('c2')
    .service('web')
    .service('log', true)
    .units('web', 3, ['c1', 'c2'])
    .relate('web', 'log', 'container');
}

describe('sidecars: one unit per principal unit, on the same cell', () => {
  it("every placed Alive principal without its sidecar is listed, and the principal's UA creates it", () => {
    const m = base().units('web', 1, [], 3);
    assert.deepEqual(
      sidecarsToCreate(m.view).map((s) => s.principal),
      [web(0), web(1), web(2)],
      'web#3 has no cell yet, so no sidecar yet',
    );
    for (let i = 0; i < 3; i++)
      assert.equal(
        m.step((v) => unitAgentStep(v, web(i), now)),
        'txn',
      );
    assert.deepEqual(sidecarsToCreate(m.view), []);
    for (let i = 0; i < 3; i++) {
      assert.equal(m.view.unit(log(i))?.cell_id, m.view.unit(web(i))?.cell_id);
      assert.equal(m.view.unit(log(i))?.principal, web(i));
    }
  });

  it('a second sidecar for the same principal is refused (the name is taken)', () => {
    const m = base().sidecar(web(0), 'log');
    assert.equal(
      code(() => addSidecarUnit(m.view, web(0), 'log')),
      'already_exists',
    );
  });

  it('sidecar services get no units of their own, and sidecars cannot be destroyed directly', () => {
    const m = base().sidecar(web(0), 'log');
    assert.equal(
      code(() => addUnit(m.view, 'log', 9)),
      'conflict',
    );
    assert.equal(
      code(() => destroyUnit(m.view, log(0), now)),
      'conflict',
    );
    assert.equal(
      code(() => destroySidecarUnit(m.view, log(0), now)),
      'conflict',
      'its principal and relation are Alive',
    );
  });

  it('a principal going Dying lists its sidecar for destruction, and the cleanup makes it Dying', async () => {
    const m = base().sidecar(web(0), 'log').sidecar(web(1), 'log');
    m.apply((v) => destroyUnit(v, web(0), now));
    assert.deepEqual(sidecarsToDestroy(m.view, 'log'), [log(0)]);
    await runDueCleanups(m.runner, { now });
    assert.equal(m.view.unit(log(0))?.life, 'dying');
    assert.equal(m.view.unit(log(1))?.life, 'alive');
    assert.deepEqual(sidecarsToDestroy(m.view, 'log'), []);
  });

  it('a sidecar built while its principal was Alive aborts if the principal started dying meanwhile', () => {
    const m = base();
    const add = addSidecarUnit(m.view, web(0), 'log');
    m.apply((v) => destroyUnit(v, web(0), now));
    assert.throws(
      () => m.runner.apply(add),
      (err: unknown) => err instanceof BerthError && err.code === 'cas_conflict',
    );
  });

  it('destroying the container relation makes every sidecar Dying, one per transaction', async () => {
    const m = base().sidecar(web(0), 'log').sidecar(web(1), 'log').sidecar(web(2), 'log');
    m.apply((_v) => ({
      rule: 'enter',
      asserts: [],
      ops: [{ op: 'enter-scope', relation: relationId('web', 'log'), unit: web(0) }],
    }));
    m.apply((v) => destroyRelation(v, relationId('web', 'log'), now));
    assert.deepEqual(sidecarsToDestroy(m.view, 'log'), [log(0), log(1), log(2)]);
    const report = await runDueCleanups(m.runner, { now });
    assert.equal(report.txns, 4, 'three sidecars, then the job ends');
    for (let i = 0; i < 3; i++) assert.equal(m.view.unit(log(i))?.life, 'dying');
    assert.equal(m.view.unit(web(0))?.life, 'alive', 'principals stay');
  });
});
