import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ActualLRP, BbsEvent, Task } from '../bbs/index.js';
import { desiredDefinition } from '../testing/bbs-fixtures.js';
import { narrateEvent, narrateEvents } from './up-narrator.js';

const base = { id: '1', created_at: '2026-11-25T00:00:00Z' };
const actual = (over: Partial<ActualLRP> = {}): ActualLRP => ({
  process_guid: 'web',
  index: 0,
  domain: 'd',
  instance_guid: 'i',
  cell_id: 'local',
  state: 'CLAIMED',
  crash_count: 0,
  last_crashed_at: null,
  crash_reason: '',
  since: base.created_at,
  placement_error: '',
  address: '127.0.0.1',
  ports: [],
  evacuating: false,
  modification_tag: { epoch: 'e', index: 1 },
  ...over,
});
const task = (over: Partial<Task> = {}): Task => ({
  task_guid: 't1',
  domain: 'd',
  image: 'bb:1',
  env: {},
  memory_mb: 0,
  disk_mb: 0,
  result_file: '',
  completion_callback_url: '',
  placement_tags: [],
  state: 'RUNNING',
  cell_id: 'local',
  result: '',
  failed: false,
  failure_reason: '',
  created_at: base.created_at,
  updated_at: base.created_at,
  first_completed_at: null,
  modification_tag: { epoch: 'e', index: 1 },
  ...over,
});
const desired = { ...desiredDefinition('web', 2), modification_tag: { epoch: 'e', index: 1 } } as never;

describe('narrateEvent: one line per event that matters, none for the rest', () => {
  const rows: [string, BbsEvent, string | undefined][] = [
    [
      'an instance starts running',
      { ...base, type: 'actual_lrp_changed', before: actual(), after: actual({ state: 'RUNNING' }) },
      'instance web#0 running on cell local',
    ],
    [
      'an instance crashes',
      {
        ...base,
        type: 'actual_lrp_changed',
        before: actual({ state: 'RUNNING' }),
        after: actual({ state: 'CRASHED', crash_count: 2, crash_reason: 'exit 1' }),
      },
      'instance web#0 crashed (2 so far): exit 1',
    ],
    [
      'an instance cannot be placed',
      {
        ...base,
        type: 'actual_lrp_changed',
        before: actual({ state: 'UNCLAIMED' }),
        after: actual({ state: 'UNCLAIMED', placement_error: 'insufficient resources' }),
      },
      'instance web#0 not placed: insufficient resources',
    ],
    [
      'a claim is not news',
      { ...base, type: 'actual_lrp_changed', before: actual({ state: 'UNCLAIMED' }), after: actual() },
      undefined,
    ],
    [
      'an evacuating copy is not news',
      {
        ...base,
        type: 'actual_lrp_changed',
        before: actual({ evacuating: true }),
        after: actual({ state: 'RUNNING', evacuating: true }),
      },
      undefined,
    ],
    [
      'an instance created is not news',
      { ...base, type: 'actual_lrp_created', actual_lrp: actual() },
      undefined,
    ],
    [
      'an LRP desired',
      { ...base, type: 'desired_lrp_created', desired_lrp: desired },
      'desired web (2 instances)',
    ],
    ['an LRP removed', { ...base, type: 'desired_lrp_removed', desired_lrp: desired }, 'removed web'],
    [
      'a task succeeds',
      { ...base, type: 'task_changed', before: task(), after: task({ state: 'COMPLETED' }) },
      'task t1 succeeded',
    ],
    [
      'a task fails',
      {
        ...base,
        type: 'task_changed',
        before: task(),
        after: task({ state: 'COMPLETED', failed: true, failure_reason: 'exit 3' }),
      },
      'task t1 failed: exit 3',
    ],
    [
      'a task resolving is not news',
      {
        ...base,
        type: 'task_changed',
        before: task({ state: 'COMPLETED' }),
        after: task({ state: 'RESOLVING' }),
      },
      undefined,
    ],
  ];
  for (const [what, event, line] of rows) it(what, () => assert.equal(narrateEvent(event), line));
});

describe('narrateEvents', () => {
  it('skips the events already stored, then narrates the new ones in order', async () => {
    const events: BbsEvent[] = [{ ...base, id: '1', type: 'desired_lrp_created', desired_lrp: desired }];
    const store = {
      readEvents: async (req: { after?: string; limit?: number }) =>
        events.filter((e) => req.after === undefined || Number(e.id) > Number(req.after)),
      headEventId: async () => events.at(-1)?.id ?? '',
    };
    const lines: string[] = [];
    const stop = new AbortController();
    const running = narrateEvents(store, (l) => lines.push(l), { signal: stop.signal, intervalMs: 5 });
    await new Promise((resolve) => setTimeout(resolve, 20));
    events.push({ ...base, id: '2', type: 'desired_lrp_removed', desired_lrp: desired });
    events.push({ ...base, id: '3', type: 'actual_lrp_created', actual_lrp: actual() });
    for (let i = 0; i < 100 && lines.length === 0; i++)
      await new Promise((resolve) => setTimeout(resolve, 10));
    stop.abort();
    await running;
    assert.deepEqual(lines, ['removed web']);
  });

  it('starts from the head without reading the events before it', async () => {
    const afters: (string | undefined)[] = [];
    const store = {
      readEvents: async (req: { after?: string; limit?: number }) => {
        afters.push(req.after);
        return [];
      },
      headEventId: async () => '41-7',
    };
    const stop = new AbortController();
    const running = narrateEvents(store, () => {}, { signal: stop.signal, intervalMs: 5 });
    for (let i = 0; i < 100 && afters.length === 0; i++) await new Promise((r) => setTimeout(r, 5));
    stop.abort();
    await running;
    assert.ok(afters.length > 0);
    assert.ok(afters.every((a) => a === '41-7'));
  });
});
