import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { BbsEvent } from '../../bbs/index.js';
import { actualRecord, cellRecord, desiredRecord, taskRecord } from '../../testing/console-records.js';
import { ClusterView } from './cluster-view.js';

const at = { id: '1-1', created_at: '2026-11-25T10:00:00.000Z' };
const tag = (epoch: string, index: number) => ({ modification_tag: { epoch, index } });

function viewWith(): ClusterView {
  const view = new ClusterView();
  view.load({
    desired: [desiredRecord('web', tag('d', 3))],
    actual: [actualRecord('web', 0, tag('a', 5))],
    tasks: [taskRecord('t1', tag('t', 2))],
    cells: [],
  });
  return view;
}

describe('ClusterView: a snapshot, then events in order, each record guarded by its modification tag', () => {
  it('applies a newer change and bumps the version', () => {
    const view = viewWith();
    const before = view.version;
    const after = actualRecord('web', 0, { ...tag('a', 6), state: 'CRASHED' });
    const event: BbsEvent = {
      ...at,
      type: 'actual_lrp_changed',
      before: actualRecord('web', 0, tag('a', 5)),
      after,
    };
    assert.equal(view.apply(event), true);
    assert.equal(view.actual.get('web/0')?.state, 'CRASHED');
    assert.equal(view.version, before + 1);
  });

  it('ignores a change older than the snapshot: the stream opened before the list was read', () => {
    const view = viewWith();
    const before = view.version;
    const old = actualRecord('web', 0, { ...tag('a', 4), state: 'CLAIMED' });
    assert.equal(view.apply({ ...at, type: 'actual_lrp_created', actual_lrp: old }), false);
    assert.equal(view.actual.get('web/0')?.state, 'RUNNING');
    assert.equal(view.version, before);
  });

  it('a record re-made under a new epoch replaces the old incarnation', () => {
    const view = viewWith();
    assert.equal(
      view.apply({ ...at, type: 'desired_lrp_created', desired_lrp: desiredRecord('web', tag('d2', 0)) }),
      true,
    );
    assert.deepEqual(view.desired.get('web')?.modification_tag, { epoch: 'd2', index: 0 });
  });

  it('a removal removes its own or an older version, never a newer one or another incarnation', () => {
    const view = viewWith();
    assert.equal(view.apply({ ...at, type: 'task_removed', task: taskRecord('t1', tag('t', 1)) }), false);
    assert.equal(view.apply({ ...at, type: 'task_removed', task: taskRecord('t1', tag('other', 9)) }), false);
    assert.ok(view.tasks.has('t1'));
    assert.equal(view.apply({ ...at, type: 'task_removed', task: taskRecord('t1', tag('t', 2)) }), true);
    assert.equal(view.tasks.has('t1'), false);
    assert.equal(
      view.apply({ ...at, type: 'desired_lrp_removed', desired_lrp: desiredRecord('nope') }),
      false,
    );
  });

  it('evacuation keeps the running copy and the evacuating copy apart, and moves the record between keys', () => {
    const view = viewWith();
    const evacuating = actualRecord('web', 0, { ...tag('a', 6), evacuating: true });
    view.apply({
      ...at,
      type: 'actual_lrp_changed',
      before: actualRecord('web', 0, tag('a', 5)),
      after: evacuating,
    });
    assert.deepEqual([...view.actual.keys()], ['web/0#evacuating']);
    view.apply({
      ...at,
      type: 'actual_lrp_created',
      actual_lrp: actualRecord('web', 0, { ...tag('b', 0), state: 'UNCLAIMED' }),
    });
    assert.deepEqual([...view.actual.keys()].sort(), ['web/0', 'web/0#evacuating']);
  });

  it('every event kind lands in its map', () => {
    const view = new ClusterView();
    const events: BbsEvent[] = [
      { ...at, type: 'desired_lrp_created', desired_lrp: desiredRecord('a') },
      {
        ...at,
        type: 'desired_lrp_changed',
        before: desiredRecord('a'),
        after: desiredRecord('a', { ...tag('e1', 1), instances: 3 }),
      },
      { ...at, type: 'actual_lrp_created', actual_lrp: actualRecord('a', 0) },
      { ...at, type: 'task_created', task: taskRecord('t') },
      {
        ...at,
        type: 'task_changed',
        before: taskRecord('t'),
        after: taskRecord('t', { ...tag('t1', 1), state: 'RUNNING' }),
      },
      { ...at, type: 'actual_lrp_removed', actual_lrp: actualRecord('a', 0) },
    ];
    for (const event of events) assert.equal(view.apply(event), true, event.type);
    assert.equal(view.desired.get('a')?.instances, 3);
    assert.equal(view.tasks.get('t')?.state, 'RUNNING');
    assert.equal(view.actual.size, 0);
  });

  it('cells come and go by their events, kept sorted by id; a removal of an unknown cell changes nothing', () => {
    const view = viewWith();
    view.setCells([cellRecord('c2')]);
    const version = view.version;
    assert.equal(view.apply({ ...at, type: 'cell_appeared', cell: cellRecord('c1') }), true);
    assert.equal(view.apply({ ...at, type: 'cell_appeared', cell: cellRecord('c3') }), true);
    assert.deepEqual(
      view.cells.map((c) => c.cell_id),
      ['c1', 'c2', 'c3'],
    );
    const bigger = cellRecord('c2', { capacity: { memory_mb: 9999, disk_mb: 1, containers: 1 } });
    assert.equal(view.apply({ ...at, type: 'cell_changed', before: cellRecord('c2'), after: bigger }), true);
    assert.equal(view.cells.find((c) => c.cell_id === 'c2')?.capacity.memory_mb, 9999);
    assert.equal(view.apply({ ...at, type: 'cell_disappeared', cell_id: 'c1', reason: 'expired' }), true);
    assert.equal(view.apply({ ...at, type: 'cell_disappeared', cell_id: 'c9', reason: 'removed' }), false);
    assert.deepEqual(
      view.cells.map((c) => c.cell_id),
      ['c2', 'c3'],
    );
    assert.equal(view.version, version + 4);
  });
});
