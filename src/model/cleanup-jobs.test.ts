import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ModelBuilder } from '../testing/model-builder.js';
import { cleanupStep, dueCleanups, runDueCleanups } from './cleanup-jobs.js';
import { MemoryModel, MemoryModelTxnRunner } from './memory-model-txn-runner.js';
import type { ModelTxnRunner } from './model-txn-runner.js';
import type { ModelTxn, ModelView } from './model-types.js';
import { destroyService } from './service-rules.js';
import { cleanupId, unitName } from './txn-parts.js';
import { destroyUnit, forceDestroyUnit } from './unit-rules.js';

const now = new Date('2024-05-01T12:00:00.000Z');

describe('cleanup jobs (DESIGN.md: cascade one entity at a time, retried until they succeed, survive restarts)', () => {
  it('a job is a row beside the life change; the model can be copied ("restarted") mid-job and finished from the copy', async () => {
    const m = new ModelBuilder().service('web').units('web', 10);
    m.apply((v) => destroyService(v, 'web', now));
    const job = m.view.cleanup(cleanupId('service-dying', 'web'))!;
    m.runner.apply(cleanupStep(m.view, job, { now, batchSize: 4 }));
    // A "restart": a fresh store built from the rows only.
    const copy = new ModelBuilder();
    const data = m.view.toData();
    copy.runner.apply({
      rule: 'restore',
      asserts: [],
      ops: [
        ...data.services.map((service) => ({ op: 'insert-service' as const, service })),
        ...data.units.map((unit) => ({ op: 'insert-unit' as const, unit })),
        ...data.cleanups.map((j) => ({ op: 'insert-cleanup' as const, job: j })),
      ],
    });
    const report = await runDueCleanups(copy.runner, { now, batchSize: 4 });
    assert.equal(report.txns, 3, 'two more batches (4 + 2) and the end');
    assert.equal(copy.view.count('alive-units-of-service', 'web'), 0);
    assert.deepEqual([...copy.view.cleanups()], []);
  });

  it('a step is idempotent: built twice from the same view, the second aborts and the rebuilt one moves on', () => {
    const m = new ModelBuilder().service('web').units('web', 3);
    m.apply((v) => destroyService(v, 'web', now));
    const job = m.view.cleanup(cleanupId('service-dying', 'web'))!;
    const a = cleanupStep(m.view, job, { now, batchSize: 2 });
    const b = cleanupStep(m.view, job, { now, batchSize: 2 });
    m.runner.apply(a);
    assert.throws(
      () => m.runner.apply(b),
      (err: unknown) => err instanceof Error && err.name === 'TxnAbortedError',
    );
    const c = cleanupStep(m.view, job, { now, batchSize: 2 });
    assert.deepEqual(
      c.ops.map((o) => (o.op === 'set-life' ? o.entity.id : o.op)),
      [unitName('web', 2)],
      'only the unit not yet Dying',
    );
  });

  it('jobs wait for their due time (the --force backstop runs at now + max-wait)', () => {
    const m = new ModelBuilder().service('web').units('web', 1);
    m.apply((v) => forceDestroyUnit(v, unitName('web', 0), now, 30_000));
    assert.deepEqual(
      dueCleanups(m.view, now).map((j) => j.id),
      [cleanupId('force-unit', unitName('web', 0))],
    );
    assert.equal(dueCleanups(m.view, new Date(now.getTime() + 30_000)).length, 2);
  });

  it('a job that keeps failing is reported and kept for the next run; the other jobs go on', async () => {
    const inner = new MemoryModelTxnRunner(new MemoryModel());
    const m = new ModelBuilder(inner).service('web').service('api').units('web', 1).units('api', 1);
    m.apply((v) => destroyService(v, 'web', now));
    m.apply((v) => destroyService(v, 'api', now));
    const flaky: ModelTxnRunner = {
      read: () => inner.read(),
      run: async (t: ModelTxn) => {
        if (t.ops.some((o) => o.op === 'set-life' && o.entity.id === unitName('web', 0)))
          throw new Error('disk full');
        await inner.run(t);
      },
    };
    const report = await runDueCleanups(flaky, { now });
    assert.deepEqual(
      report.errors.map((e) => e.job),
      [cleanupId('service-dying', 'web')],
    );
    assert.ok(inner.model.cleanup(cleanupId('service-dying', 'web')), 'kept, to be retried');
    assert.equal(inner.model.unit(unitName('api', 0))?.life, 'dying', 'the other job finished');
    const retry = await runDueCleanups(inner, { now });
    assert.deepEqual(retry.errors, []);
    assert.equal(inner.model.unit(unitName('web', 0))?.life, 'dying');
  });

  it('a step that lost a race is rebuilt from a fresh view (runDueCleanups retries aborted txns)', async () => {
    const inner = new MemoryModelTxnRunner();
    const m = new ModelBuilder(inner).service('web').units('web', 2);
    m.apply((v) => destroyService(v, 'web', now));
    let raced = false;
    const racing: ModelTxnRunner = {
      read: () => inner.read(),
      run: async (t: ModelTxn) => {
        if (!raced) {
          raced = true;
          // Another writer (the unit's own agent) gets there first.
          inner.apply(destroyUnit(inner.model as ModelView, unitName('web', 0), now)!);
        }
        await inner.run(t);
      },
    };
    const report = await runDueCleanups(racing, { now });
    assert.deepEqual(report.errors, []);
    assert.equal(inner.model.count('alive-units-of-service', 'web'), 0);
    assert.ok(inner.stats().aborted >= 1);
  });
});
