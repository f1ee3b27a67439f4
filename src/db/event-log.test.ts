import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import { postCommitNotifier } from './event-log.js';
import { openSqliteBackend, runMigrations, SqlDatabase } from './index.js';

const at = new Date('2024-01-01T00:00:00.000Z');

async function openWithEvents(): Promise<SqlDatabase> {
  const database = new SqlDatabase(openSqliteBackend({ path: ':memory:' }));
  await runMigrations(
    database.backend,
    [
      {
        owner: 'test',
        ledger: 'test_ledger',
        migrations: [
          {
            version: 1,
            name: 'events',
            statements: {
              sqlite: [
                `CREATE TABLE events (id INTEGER PRIMARY KEY AUTOINCREMENT, txid INTEGER NOT NULL DEFAULT 0,
                  type TEXT NOT NULL, data TEXT NOT NULL, created_at TEXT NOT NULL)`,
              ],
              postgres: [],
            },
          },
        ],
      },
    ],
    at,
  );
  return database;
}

describe('EventLog: the one writer of the events table', () => {
  it('appends the events with the transaction and wakes listeners once it committed', async () => {
    const database = await openWithEvents();
    try {
      const order: string[] = [];
      database.events.onEvents(() => order.push('woken'));
      await database.events.write(
        () => at,
        async (_tx, stamp, events: { type: string; n: number }[]) => {
          events.push({ type: 'one', n: 1 });
          events.push({ type: 'two', n: 2 });
          order.push(`wrote at ${stamp.toISOString()}`);
        },
      );
      order.push('returned');
      assert.deepEqual(order, ['wrote at 2024-01-01T00:00:00.000Z', 'woken', 'returned']);
      const rows = await database.backend.read((tx) => database.backend.readEvents(tx, -1, 0, 10));
      assert.deepEqual(
        rows.map((r) => [r.type, r.data, r.created_at]),
        [
          ['one', '{"n":1}', '2024-01-01T00:00:00.000Z'],
          ['two', '{"n":2}', '2024-01-01T00:00:00.000Z'],
        ],
      );
    } finally {
      await database.close();
    }
  });

  it('wakes nobody for a transaction without events, or one that rolled back', async () => {
    const database = await openWithEvents();
    try {
      let wakes = 0;
      const unsubscribe = database.events.onEvents(() => wakes++);
      await database.events.write(
        () => at,
        async () => undefined,
      );
      await assert.rejects(
        database.events.write(
          () => at,
          async (_tx, _at, events) => {
            events.push({ type: 'lost' });
            throw new Error('rolled back');
          },
        ),
        /rolled back/,
      );
      assert.equal(wakes, 0);
      const count = await sql<{ n: number }>`SELECT COUNT(*) AS n FROM events`.execute(database.backend.db);
      assert.equal(Number(count.rows[0]?.n), 0);
      unsubscribe();
      await database.events.write(
        () => at,
        async (_tx, _at, events) => {
          events.push({ type: 'after' });
        },
      );
      assert.equal(wakes, 0, 'an unsubscribed listener stays asleep');
    } finally {
      await database.close();
    }
  });
});

describe('postCommitNotifier: one NOTIFY at a time after the commits', () => {
  it('sends at once when idle, and coalesces what commits during a send into the next', async () => {
    const sent: string[][] = [];
    let release: (() => void) | undefined;
    const notify = postCommitNotifier(async (types) => {
      sent.push([...types]);
      await new Promise<void>((resolve) => {
        release = resolve;
      });
    });
    notify(['actual_lrp_changed']);
    assert.deepEqual(sent, [['actual_lrp_changed']]);
    notify(['actual_lrp_changed', 'desired_lrp_created']);
    notify(['actual_lrp_changed', 'task_created']);
    assert.equal(sent.length, 1, 'nothing more while one is in flight');
    release?.();
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(sent[1], ['actual_lrp_changed', 'desired_lrp_created', 'task_created']);
    release?.();
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(sent.length, 2);
  });

  it('goes on after a NOTIFY that failed', async () => {
    const sent: string[][] = [];
    let fail = true;
    const notify = postCommitNotifier(async (types) => {
      sent.push([...types]);
      if (fail) {
        fail = false;
        throw new Error('the database is restarting');
      }
    });
    notify(['a']);
    await new Promise((resolve) => setImmediate(resolve));
    notify(['b']);
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(sent, [['a'], ['b']]);
  });
});
