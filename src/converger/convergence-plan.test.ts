import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type {
  ActualLRP,
  ActualLRPState,
  CellPresence,
  DesiredLRP,
  Domain,
  Task,
  TaskState,
} from '../bbs/index.js';
import {
  type ConvergenceConfig,
  type ConvergenceInput,
  cellDisappearedReason,
  defaultConvergenceConfig,
  type LRPConvergenceItem,
  mergeStartRequests,
  pendingExpiredReason,
  planConvergence,
  planLostCells,
  type TaskConvergenceItem,
} from './convergence-plan.js';

const now = new Date('2024-06-01T12:00:00.000Z');
const ago = (ms: number): string => new Date(now.getTime() - ms).toISOString();
const later = (ms: number): string => new Date(now.getTime() + ms).toISOString();
const s = 1000;
const min = 60 * s;
const tag = { epoch: 'e', index: 1 };
const config: ConvergenceConfig = defaultConvergenceConfig;

function desired(process_guid: string, instances: number, domain = 'apps'): DesiredLRP {
  return {
    process_guid,
    domain,
    instances,
    image: 'img',
    env: {},
    memory_mb: 128,
    disk_mb: 256,
    ports: [8080],
    routes: {},
    annotation: '',
    start_timeout_s: 60,
    placement_tags: [],
    created_at: ago(60 * min),
    modification_tag: tag,
  };
}

function actual(
  process_guid: string,
  index: number,
  state: ActualLRPState,
  over: Partial<ActualLRP> = {},
): ActualLRP {
  const placed = state === 'CLAIMED' || state === 'RUNNING';
  return {
    process_guid,
    index,
    domain: 'apps',
    instance_guid: `${process_guid}-${index}`,
    cell_id: placed ? 'cell-1' : '',
    state,
    crash_count: 0,
    last_crashed_at: null,
    crash_reason: '',
    since: ago(1 * s),
    placement_error: '',
    address: '',
    ports: [],
    evacuating: false,
    modification_tag: tag,
    ...over,
  };
}

const liveCell: CellPresence = {
  cell_id: 'cell-1',
  zone: 'z1',
  capacity: { memory_mb: 1024, disk_mb: 1024, containers: 10 },
  rep_url: 'http://cell-1',
  placement_tags: [],
  expires_at: later(30 * s),
};
const expiredCell: CellPresence = { ...liveCell, cell_id: 'cell-2', expires_at: ago(1) };
const fresh: Domain = { domain: 'apps', fresh_until: later(2 * min) };
const stale: Domain = { domain: 'apps', fresh_until: ago(1) };

function plan(over: Partial<ConvergenceInput>): {
  lrps: readonly LRPConvergenceItem[];
  tasks: readonly TaskConvergenceItem[];
} {
  return planConvergence({
    desired: [],
    actuals: [],
    cells: [liveCell, expiredCell],
    domains: [fresh],
    tasks: [],
    now,
    config,
    ...over,
  });
}

/** The plan in a compact, readable form: "kind process_guid/index". */
function lrpSummary(items: readonly LRPConvergenceItem[]): string[] {
  return items.map((i) => `${i.kind} ${i.key.process_guid}/${i.key.index}`).sort();
}

interface LRPCase {
  readonly name: string;
  readonly desired: readonly DesiredLRP[];
  readonly actuals: readonly ActualLRP[];
  readonly domains?: readonly Domain[];
  readonly queuedStarts?: ConvergenceInput['queuedStarts'];
  readonly want: readonly string[];
}

function runCases(title: string, cases: readonly LRPCase[]): void {
  describe(title, () => {
    for (const c of cases) {
      it(c.name, () => {
        const p = plan({
          desired: c.desired,
          actuals: c.actuals,
          domains: c.domains ?? [fresh],
          ...(c.queuedStarts ? { queuedStarts: c.queuedStarts } : {}),
        });
        assert.deepEqual(lrpSummary(p.lrps), [...c.want].sort());
      });
    }
  });
}

runCases('converger 1: reaping ActualLRPs on failed cells', [
  {
    name: 'RUNNING on a vanished cell → unclaim + start',
    desired: [desired('a', 1)],
    actuals: [actual('a', 0, 'RUNNING', { cell_id: 'cell-2' })],
    want: ['unclaim-and-start a/0'],
  },
  {
    name: 'CLAIMED on a vanished cell → unclaim + start',
    desired: [desired('a', 1)],
    actuals: [actual('a', 0, 'CLAIMED', { cell_id: 'cell-2' })],
    want: ['unclaim-and-start a/0'],
  },
  {
    name: 'RUNNING on a cell never registered → unclaim + start',
    desired: [desired('a', 1)],
    actuals: [actual('a', 0, 'RUNNING', { cell_id: 'ghost' })],
    want: ['unclaim-and-start a/0'],
  },
  {
    name: 'RUNNING on a live cell → nothing',
    desired: [desired('a', 1)],
    actuals: [actual('a', 0, 'RUNNING')],
    want: [],
  },
  {
    name: 'reaping is not destructive: it happens in a stale domain too',
    desired: [desired('a', 1)],
    actuals: [actual('a', 0, 'RUNNING', { cell_id: 'cell-2' })],
    domains: [stale],
    want: ['unclaim-and-start a/0'],
  },
  {
    name: 'an /evacuating copy on a vanished cell is removed',
    desired: [desired('a', 1)],
    actuals: [actual('a', 0, 'RUNNING'), actual('a', 0, 'RUNNING', { cell_id: 'cell-2', evacuating: true })],
    want: ['remove-evacuating a/0'],
  },
  {
    name: 'an /evacuating copy on a live cell is left to its rep',
    desired: [desired('a', 1)],
    actuals: [actual('a', 0, 'UNCLAIMED'), actual('a', 0, 'RUNNING', { evacuating: true })],
    want: [],
  },
]);

runCases('converger 2: starting missing ActualLRPs', [
  {
    name: 'no ActualLRP for indices 0..2 → create + start each',
    desired: [desired('a', 3)],
    actuals: [],
    want: ['create-and-start a/0', 'create-and-start a/1', 'create-and-start a/2'],
  },
  {
    name: 'a hole at index 1 → create + start index 1 only',
    desired: [desired('a', 3)],
    actuals: [actual('a', 0, 'RUNNING'), actual('a', 2, 'CLAIMED')],
    want: ['create-and-start a/1'],
  },
  {
    name: 'the state of existing ActualLRPs is irrelevant',
    desired: [desired('a', 2)],
    actuals: [
      actual('a', 0, 'UNCLAIMED'),
      actual('a', 1, 'CRASHED', { crash_count: 5, last_crashed_at: ago(1 * s) }),
    ],
    want: [],
  },
  {
    name: 'an /evacuating copy does not count as the instance',
    desired: [desired('a', 1)],
    actuals: [actual('a', 0, 'RUNNING', { evacuating: true })],
    want: ['create-and-start a/0'],
  },
  {
    name: 'starting is not destructive: it happens in a stale domain too',
    desired: [desired('a', 1)],
    actuals: [],
    domains: [stale],
    want: ['create-and-start a/0'],
  },
  { name: '0 instances desired → nothing to start', desired: [desired('a', 0)], actuals: [], want: [] },
]);

runCases('converger 3: stopping extra ActualLRPs (fresh domain only)', [
  {
    name: 'RUNNING at index ≥ N → stop to its cell',
    desired: [desired('a', 1)],
    actuals: [actual('a', 0, 'RUNNING'), actual('a', 1, 'RUNNING')],
    want: ['stop a/1'],
  },
  {
    name: 'CLAIMED at index ≥ N → stop to its cell',
    desired: [desired('a', 1)],
    actuals: [actual('a', 0, 'RUNNING'), actual('a', 3, 'CLAIMED')],
    want: ['stop a/3'],
  },
  {
    name: 'UNCLAIMED at index ≥ N → CAD',
    desired: [desired('a', 1)],
    actuals: [actual('a', 0, 'RUNNING'), actual('a', 1, 'UNCLAIMED')],
    want: ['remove-actual a/1'],
  },
  {
    name: 'CRASHED at index ≥ N → CAD',
    desired: [desired('a', 1)],
    actuals: [actual('a', 0, 'RUNNING'), actual('a', 1, 'CRASHED')],
    want: ['remove-actual a/1'],
  },
  {
    name: 'RUNNING at index ≥ N on a vanished cell → CAD (no rep to tell)',
    desired: [desired('a', 1)],
    actuals: [actual('a', 0, 'RUNNING'), actual('a', 1, 'RUNNING', { cell_id: 'cell-2' })],
    want: ['remove-actual a/1'],
  },
  {
    name: 'no DesiredLRP at all → every index is extra',
    desired: [],
    actuals: [actual('gone', 0, 'RUNNING'), actual('gone', 1, 'UNCLAIMED')],
    want: ['stop gone/0', 'remove-actual gone/1'],
  },
  {
    name: 'stale domain → extras are left alone',
    desired: [desired('a', 1)],
    actuals: [actual('a', 0, 'RUNNING'), actual('a', 1, 'RUNNING'), actual('a', 2, 'UNCLAIMED')],
    domains: [stale],
    want: [],
  },
  {
    name: 'unknown domain counts as stale',
    desired: [],
    actuals: [actual('gone', 0, 'RUNNING')],
    domains: [],
    want: [],
  },
]);

runCases('converger 4: restarting CRASHED ActualLRPs after their back-off', [
  {
    name: 'crash 3, 29 s ago → wait',
    desired: [desired('a', 1)],
    actuals: [actual('a', 0, 'CRASHED', { crash_count: 3, last_crashed_at: ago(29 * s) })],
    want: [],
  },
  {
    name: 'crash 3, 30 s ago → restart',
    desired: [desired('a', 1)],
    actuals: [actual('a', 0, 'CRASHED', { crash_count: 3, last_crashed_at: ago(30 * s) })],
    want: ['restart-crashed a/0'],
  },
  {
    name: 'crash 7, 8 min ago → restart',
    desired: [desired('a', 1)],
    actuals: [actual('a', 0, 'CRASHED', { crash_count: 7, last_crashed_at: ago(8 * min) })],
    want: ['restart-crashed a/0'],
  },
  {
    name: 'crash 9, 15 min ago → wait (16 min cap)',
    desired: [desired('a', 1)],
    actuals: [actual('a', 0, 'CRASHED', { crash_count: 9, last_crashed_at: ago(15 * min) })],
    want: [],
  },
  {
    name: 'crash 200 → never restarted',
    desired: [desired('a', 1)],
    actuals: [actual('a', 0, 'CRASHED', { crash_count: 200, last_crashed_at: ago(60 * min) })],
    want: [],
  },
  {
    name: 'restarting is not destructive: it happens in a stale domain too',
    desired: [desired('a', 1)],
    actuals: [actual('a', 0, 'CRASHED', { crash_count: 4, last_crashed_at: ago(1 * min) })],
    domains: [stale],
    want: ['restart-crashed a/0'],
  },
]);

runCases('converger 5: re-emitting start requests for UNCLAIMED ActualLRPs', [
  {
    name: 'UNCLAIMED for 29 s → wait',
    desired: [desired('a', 1)],
    actuals: [actual('a', 0, 'UNCLAIMED', { since: ago(29 * s) })],
    want: [],
  },
  {
    name: 'UNCLAIMED for 30 s → re-emit start',
    desired: [desired('a', 1)],
    actuals: [actual('a', 0, 'UNCLAIMED', { since: ago(30 * s) })],
    want: ['re-emit-start a/0'],
  },
  {
    name: 'UNCLAIMED for 30 min with its start request still queued → wait (the auctioneer has it)',
    desired: [desired('a', 2)],
    actuals: [
      actual('a', 0, 'UNCLAIMED', { since: ago(30 * min) }),
      actual('a', 1, 'UNCLAIMED', { since: ago(30 * min) }),
    ],
    queuedStarts: [
      { process_guid: 'a', index: 0 },
      { process_guid: 'b', index: 1 },
    ],
    want: ['re-emit-start a/1'],
  },
  {
    name: "CLAIMED for long → not the converger's (the rep handles its own claims)",
    desired: [desired('a', 1)],
    actuals: [actual('a', 0, 'CLAIMED', { since: ago(60 * min) })],
    want: [],
  },
]);

describe('converger: start requests', () => {
  it('carry the DesiredLRP resources and are merged per process_guid', () => {
    const p = plan({
      desired: [desired('a', 3)],
      actuals: [actual('a', 1, 'UNCLAIMED', { since: ago(1 * min) })],
    });
    const starts = p.lrps.flatMap((i) => ('start' in i ? [i.start] : []));
    assert.deepEqual(mergeStartRequests(starts), [
      {
        process_guid: 'a',
        domain: 'apps',
        indices: [0, 1, 2],
        memory_mb: 128,
        disk_mb: 256,
        placement_tags: [],
      },
    ]);
  });
});

// ---------------------------------------------------------------------------------------------

function task(task_guid: string, state: TaskState, over: Partial<Task> = {}): Task {
  return {
    task_guid,
    domain: 'jobs',
    image: 'img',
    env: {},
    memory_mb: 64,
    disk_mb: 64,
    result_file: '',
    completion_callback_url: '',
    placement_tags: [],
    state,
    cell_id: state === 'RUNNING' ? 'cell-1' : '',
    result: '',
    failed: false,
    failure_reason: '',
    created_at: ago(1 * s),
    updated_at: ago(1 * s),
    first_completed_at: state === 'COMPLETED' || state === 'RESOLVING' ? ago(1 * s) : null,
    modification_tag: tag,
    ...over,
  };
}

describe('converger: tasks', () => {
  const cases: ReadonlyArray<[string, Task, TaskConvergenceItem | null]> = [
    ['PENDING, updated 29 s ago → nothing', task('t', 'PENDING', { updated_at: ago(29 * s) }), null],
    [
      'PENDING, waited the kick interval → kick (re-auction)',
      task('t', 'PENDING', { updated_at: ago(30 * s), created_at: ago(31 * s) }),
      { kind: 'kick-task', taskGuid: 't' },
    ],
    [
      'PENDING past the pending limit → fail',
      task('t', 'PENDING', { created_at: ago(30 * min), updated_at: ago(30 * min) }),
      { kind: 'fail-task', taskGuid: 't', expected: tag, reason: pendingExpiredReason },
    ],
    ['RUNNING on a live cell → nothing', task('t', 'RUNNING', { updated_at: ago(60 * min) }), null],
    [
      'RUNNING on a vanished cell → fail "cell disappeared before completion"',
      task('t', 'RUNNING', { cell_id: 'cell-2' }),
      { kind: 'fail-task', taskGuid: 't', expected: tag, reason: cellDisappearedReason },
    ],
    ['RESOLVING for 29 s → nothing', task('t', 'RESOLVING', { updated_at: ago(29 * s) }), null],
    [
      'RESOLVING stuck past the kick interval → demote to COMPLETED',
      task('t', 'RESOLVING', { updated_at: ago(30 * s) }),
      { kind: 'demote-resolving', taskGuid: 't', expected: tag },
    ],
    ['COMPLETED 119 s ago → kept', task('t', 'COMPLETED', { first_completed_at: ago(119 * s) }), null],
    [
      'COMPLETED past its TTL → delete',
      task('t', 'COMPLETED', { first_completed_at: ago(2 * min), updated_at: ago(1 * s) }),
      { kind: 'delete-task', taskGuid: 't', expected: tag },
    ],
    [
      'COMPLETED without first_completed_at uses updated_at',
      task('t', 'COMPLETED', { first_completed_at: null, updated_at: ago(3 * min) }),
      { kind: 'delete-task', taskGuid: 't', expected: tag },
    ],
  ];
  for (const [name, t, want] of cases) {
    it(name, () => assert.deepEqual(plan({ tasks: [t] }).tasks, want === null ? [] : [want]));
  }
  it('every interval is a config field (shrunk for tests)', () => {
    const quick: ConvergenceConfig = {
      ...config,
      taskKickIntervalMs: 100,
      taskPendingLimitMs: 1000,
      taskCompletedTtlMs: 500,
    };
    const p = planConvergence({
      desired: [],
      actuals: [],
      cells: [],
      domains: [],
      tasks: [
        task('k', 'PENDING', { created_at: ago(100), updated_at: ago(100) }),
        task('f', 'PENDING', { created_at: ago(1000) }),
        task('d', 'COMPLETED', { first_completed_at: ago(500) }),
      ],
      now,
      config: quick,
    });
    assert.deepEqual(
      p.tasks.map((i) => `${i.kind} ${i.taskGuid}`),
      ['kick-task k', 'fail-task f', 'delete-task d'],
    );
  });
});

// ---------------------------------------------------------------------------------------------
// Properties

const stateArb = fc.constantFrom<ActualLRPState>('UNCLAIMED', 'CLAIMED', 'RUNNING', 'CRASHED');
const worldArb = fc.record({
  desired: fc.array(
    fc.record({
      guid: fc.constantFrom('a', 'b', 'c', 'd'),
      instances: fc.integer({ min: 0, max: 6 }),
      domain: fc.constantFrom('apps', 'other'),
    }),
    { maxLength: 4 },
  ),
  actuals: fc.array(
    fc.record({
      guid: fc.constantFrom('a', 'b', 'c', 'd', 'e'),
      index: fc.integer({ min: 0, max: 8 }),
      state: stateArb,
      cell: fc.constantFrom('cell-1', 'cell-2', 'ghost'),
      evacuating: fc.boolean(),
      crashCount: fc.integer({ min: 0, max: 210 }),
      agoMs: fc.integer({ min: 0, max: 40 * min }),
      domain: fc.constantFrom('apps', 'other'),
    }),
    { maxLength: 30 },
  ),
  appsFresh: fc.boolean(),
  otherFresh: fc.boolean(),
});

type World = typeof worldArb extends fc.Arbitrary<infer W> ? W : never;

function buildWorld(w: World): ConvergenceInput {
  const seenDesired = new Set<string>();
  const ds: DesiredLRP[] = [];
  for (const d of w.desired) {
    if (seenDesired.has(d.guid)) continue;
    seenDesired.add(d.guid);
    ds.push(desired(d.guid, d.instances, d.domain));
  }
  const seen = new Set<string>();
  const as: ActualLRP[] = [];
  for (const a of w.actuals) {
    const k = `${a.guid}/${a.index}/${a.evacuating}`;
    if (seen.has(k)) continue; // the BBS holds one record per key
    seen.add(k);
    const placed = a.state === 'CLAIMED' || a.state === 'RUNNING' || a.evacuating;
    as.push(
      actual(a.guid, a.index, a.evacuating ? 'RUNNING' : a.state, {
        domain: ds.find((d) => d.process_guid === a.guid)?.domain ?? a.domain,
        cell_id: placed ? a.cell : '',
        evacuating: a.evacuating,
        crash_count: a.crashCount,
        last_crashed_at: a.state === 'CRASHED' ? ago(a.agoMs) : null,
        since: ago(a.agoMs),
      }),
    );
  }
  const domains: Domain[] = [
    w.appsFresh ? fresh : stale,
    { domain: 'other', fresh_until: w.otherFresh ? later(1 * min) : ago(1 * min) },
  ];
  return { desired: ds, actuals: as, cells: [liveCell, expiredCell], domains, tasks: [], now, config };
}

describe('converger: properties', () => {
  it('never plans more starts than missing indices: creates = holes exactly, ≤ 1 start per index, none beyond N', () => {
    fc.assert(
      fc.property(worldArb, (w) => {
        const input = buildWorld(w);
        const p = planConvergence(input);
        for (const d of input.desired) {
          const have = new Set(
            input.actuals
              .filter((a) => a.process_guid === d.process_guid && !a.evacuating)
              .map((a) => a.index),
          );
          let holes = 0;
          for (let i = 0; i < d.instances; i++) if (!have.has(i)) holes++;
          const mine = p.lrps.filter((i) => i.key.process_guid === d.process_guid);
          assert.equal(mine.filter((i) => i.kind === 'create-and-start').length, holes);
          const starts = mine.filter((i) => 'start' in i);
          assert.equal(
            new Set(starts.map((i) => i.key.index)).size,
            starts.length,
            'two starts for one index',
          );
          for (const st of starts) assert.ok(st.key.index < d.instances);
        }
        for (const i of p.lrps) {
          if ('start' in i) assert.ok(input.desired.some((d) => d.process_guid === i.key.process_guid));
        }
      }),
      { numRuns: 400 },
    );
  });
  it('never stops anything when the domain is stale', () => {
    fc.assert(
      fc.property(worldArb, (w) => {
        const input = buildWorld(w);
        const p = planConvergence(input);
        const freshDomains = new Set(
          input.domains.filter((d) => Date.parse(d.fresh_until) > now.getTime()).map((d) => d.domain),
        );
        for (const i of p.lrps) {
          if (i.kind === 'stop' || i.kind === 'remove-actual')
            assert.ok(freshDomains.has(i.key.domain), `${i.kind} in stale ${i.key.domain}`);
        }
      }),
      { numRuns: 400 },
    );
  });
  it('never touches a healthy instance: RUNNING on a live cell at index < N gets no item', () => {
    fc.assert(
      fc.property(worldArb, (w) => {
        const input = buildWorld(w);
        const p = planConvergence(input);
        for (const a of input.actuals) {
          const d = input.desired.find((x) => x.process_guid === a.process_guid);
          if (
            a.evacuating ||
            a.state !== 'RUNNING' ||
            a.cell_id !== 'cell-1' ||
            d === undefined ||
            a.index >= d.instances
          )
            continue;
          const touched = p.lrps.some(
            (i) =>
              i.kind !== 'remove-evacuating' &&
              i.key.process_guid === a.process_guid &&
              i.key.index === a.index,
          );
          assert.ok(!touched, `${a.process_guid}/${a.index}`);
        }
      }),
      { numRuns: 400 },
    );
  });
});

describe('converger: a lost-cells plan', () => {
  const lost = new Set(['cell-2', 'ghost']);
  it('is what the full plan does with the records on the lost cells, and nothing else', () => {
    fc.assert(
      fc.property(worldArb, (w) => {
        const input = buildWorld(w);
        const onLost = input.actuals.filter((a) => lost.has(a.cell_id));
        const full = planConvergence(input);
        const recordOf = (item: LRPConvergenceItem) =>
          input.actuals.find(
            (a) =>
              a.process_guid === item.key.process_guid &&
              a.index === item.key.index &&
              a.evacuating === (item.kind === 'remove-evacuating'),
          );
        const expected = full.lrps.filter((item) => {
          const record = recordOf(item);
          return record !== undefined && lost.has(record.cell_id) && item.kind !== 're-emit-start';
        });
        const got = planLostCells({ ...input, actuals: onLost });
        // Each item whole (its tag, start request, vanished cell); the order says nothing.
        const sorted = (items: readonly LRPConvergenceItem[]) => items.map((i) => JSON.stringify(i)).sort();
        assert.deepEqual(sorted(got.lrps), sorted(expected));
      }),
      { numRuns: 400 },
    );
  });

  it('creates nothing for indices it was not shown, and fails the tasks that ran there', () => {
    const running = task('t', 'RUNNING', { cell_id: 'cell-2' });
    const p = planLostCells({
      desired: [desired('web', 3)],
      actuals: [actual('web', 1, 'RUNNING', { cell_id: 'cell-2' })],
      cells: [liveCell, expiredCell],
      domains: [fresh],
      tasks: [running],
      now,
      config,
    });
    assert.deepEqual(lrpSummary(p.lrps), ['unclaim-and-start web/1']);
    assert.deepEqual(p.tasks, [
      { kind: 'fail-task', taskGuid: 't', expected: tag, reason: cellDisappearedReason },
    ]);
  });
});
