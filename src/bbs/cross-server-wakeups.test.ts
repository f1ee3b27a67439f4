import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { eventsNotification, parseEventsNotification } from '../db/event-log.js';
import { desiredDefinition, desiredTask } from '../testing/bbs-fixtures.js';
import { type PostgresServer, postgresSkipReason, startPostgres } from '../testing/postgres-harness.js';
import { openBbsStore, type SqlBbsStore } from './index.js';

describe('the events notification payload', () => {
  it('carries its origin and each type once; anything else in it is dropped', () => {
    const payload = eventsNotification('o-1', ['task_created', 'task_changed', 'task_created']);
    assert.deepEqual(parseEventsNotification(payload), {
      origin: 'o-1',
      types: ['task_created', 'task_changed'],
    });
    assert.deepEqual(parseEventsNotification(' actual_lrp_changed'), {
      origin: '',
      types: ['actual_lrp_changed'],
    });
    assert.deepEqual(parseEventsNotification('x DROP TABLE,ok_type'), { origin: 'x', types: ['ok_type'] });
    assert.equal(parseEventsNotification('no-space'), undefined);
  });
});

/** Collects what a store's event listeners are told, and waits for a wanted type. */
function recorder(store: SqlBbsStore) {
  const seen: string[][] = [];
  const waiters = new Set<() => void>();
  const stop = store.onEvents((types) => {
    seen.push([...types]);
    for (const wake of waiters) wake();
  });
  return {
    seen,
    stop,
    /** Resolves once a wake-up named `type` arrived (the test's own timeout bounds it). */
    async until(type: string): Promise<void> {
      while (!seen.some((types) => types.includes(type)))
        await new Promise<void>((resolve) => {
          waiters.add(resolve);
          setTimeout(resolve, 100).unref();
        }).finally(() => waiters.clear());
    },
  };
}

describe('two servers on one PostgreSQL wake each other (LISTEN/NOTIFY)', {
  skip: postgresSkipReason() ?? false,
  timeout: 60_000,
}, () => {
  let pg: PostgresServer;
  let a: SqlBbsStore;
  let b: SqlBbsStore;
  before(async () => {
    pg = await startPostgres('wakeups');
    a = await openBbsStore(pg.url);
    b = await openBbsStore(pg.url);
  });
  after(async () => {
    await a?.close();
    await b?.close();
    await pg?.stop();
  });

  it("a commit through one store wakes the other's listeners, and its own exactly once", async () => {
    const onA = recorder(a);
    const onB = recorder(b);
    // The listening connections open in the background: write until the other side hears.
    for (let i = 0; !onB.seen.some((t) => t.includes('desired_lrp_created')); i++) {
      await a.desireLRP(desiredDefinition(`wake-${i}`, 0));
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const created = onA.seen.filter((t) => t.includes('desired_lrp_created')).length;
    const ownWrites = (await a.listDesiredLRPs()).filter((d) => d.process_guid.startsWith('wake-')).length;
    assert.equal(created, ownWrites, 'each own commit is announced once, never again by its notification');
    // And the other way round, for a different kind of event.
    await b.desireTask(desiredTask('wake-task'));
    await onA.until('task_created');
    onA.stop();
    onB.stop();
  });
});
