import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openBbsStore, type SqlBbsStore } from '../bbs/index.js';
import { modelServiceName, unitName } from './instance-names.js';
import { TxnAbortedError } from './model-errors.js';
import type { ModelTxn, Op } from './model-types.js';
import { addService } from './service-rules.js';
import { SqlModelTxnRunner, systemChangedEvent } from './sql-model-txn-runner.js';
import { SqlSystemStore } from './sql-system-store.js';
import { systemsChangedBy } from './txn-systems.js';

describe('systemsChangedBy: the systems a model txn touches, by op', () => {
  const web = modelServiceName('shop', '/web');
  const db = modelServiceName('shop', '/db');
  const other = modelServiceName('blog', '/api');
  const cases: ReadonlyArray<readonly [string, Op, string[]]> = [
    ['insert-cell', { op: 'insert-cell', cell: { id: 'c1', life: 'alive' } } as Op, []],
    [
      'insert-service',
      { op: 'insert-service', service: { name: web, life: 'alive', subordinate: false } },
      ['shop'],
    ],
    [
      'insert-unit',
      {
        op: 'insert-unit',
        unit: {
          name: unitName(web, 0),
          service: web,
          index: 0,
          life: 'alive',
          cell_id: null,
          principal: null,
        },
      },
      ['shop'],
    ],
    [
      'insert-relation',
      {
        op: 'insert-relation',
        relation: { id: `${other} ${web}`, endpoints: [other, web], scope: 'global', life: 'alive' },
      },
      ['blog', 'shop'],
    ],
    [
      'set-life of a unit',
      { op: 'set-life', entity: { kind: 'unit', id: unitName(db, 2) }, to: 'dying' },
      ['shop'],
    ],
    ['set-life of a cell', { op: 'set-life', entity: { kind: 'cell', id: 'c1' }, to: 'dying' }, []],
    ['remove', { op: 'remove', entity: { kind: 'service', id: other } }, ['blog']],
    ['assign-unit', { op: 'assign-unit', unit: unitName(web, 1), cell_id: 'c1' }, ['shop']],
    ['enter-scope', { op: 'enter-scope', relation: `${db} ${web}`, unit: unitName(web, 0) }, ['shop']],
    ['leave-scope', { op: 'leave-scope', relation: `${db} ${web}`, unit: unitName(web, 0) }, ['shop']],
    [
      'insert-cleanup',
      {
        op: 'insert-cleanup',
        job: { id: 'j', kind: 'service-dying', target: other, due_at: '2026-01-01T00:00:00Z' },
      },
      ['blog'],
    ],
    ['remove-cleanup', { op: 'remove-cleanup', id: 'j' }, []],
  ];
  for (const [name, op, systems] of cases) it(name, () => assert.deepEqual(systemsChangedBy([op]), systems));

  it('a txn of several ops names each system once, sorted', () => {
    const ops = cases.map(([, op]) => op);
    assert.deepEqual(systemsChangedBy(ops), ['blog', 'shop']);
  });
});

describe('model writes put system_changed on the event log (SQLite)', () => {
  let store: SqlBbsStore;
  let systems: SqlSystemStore;
  let runner: SqlModelTxnRunner;
  before(async () => {
    store = await openBbsStore(':memory:');
    runner = await SqlModelTxnRunner.open(store.backend);
    systems = new SqlSystemStore(store.backend);
  });
  after(() => store.close());

  /** The systems named by the system_changed events after `head`, in log order. */
  async function changedSince(head: string): Promise<string[]> {
    const events = await store.readEvents({ after: head, limit: 1000 });
    return events
      .filter((e) => (e.type as string) === systemChangedEvent)
      .map((e) => (e as unknown as { system: string }).system);
  }

  it("an action's acceptance, start, log lines and end each tell of its system; a heartbeat does not", async () => {
    const head = await store.headEventId();
    const action = await systems.acceptAction({
      id: 'd-1',
      system: 'shop',
      action: { kind: 'deploy', path: '/' },
      owner: 'me',
    });
    assert.ok(await systems.startAction(action.id, 'me'));
    await systems.appendLog(action.id, 'me', 'creating /web');
    await systems.heartbeat('me');
    assert.ok(await systems.finishAction(action.id, 'me', 'succeeded', ''));
    assert.deepEqual(await changedSince(head), ['shop', 'shop', 'shop', 'shop']);
  });

  it('a model txn tells of the systems its ops touch; one that aborts writes nothing', async () => {
    const head = await store.headEventId();
    const name = modelServiceName('blog', '/api');
    await runner.run(addService(await runner.read(), name));
    const stale: ModelTxn = {
      rule: 'stale add',
      asserts: [{ kind: 'absent', entity: { kind: 'service', id: name } }],
      ops: [
        {
          op: 'insert-service',
          service: { name: modelServiceName('news', '/x'), life: 'alive', subordinate: false },
        },
      ],
    };
    await assert.rejects(runner.run(stale), TxnAbortedError);
    assert.deepEqual(await changedSince(head), ['blog']);
  });
});
