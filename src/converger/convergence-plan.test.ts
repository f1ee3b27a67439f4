import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ActualLRP, DesiredLRP, Domain, Task } from '../bbs/index.js';
import {
  actual,
  ago,
  config,
  desired,
  expiredCell,
  fresh,
  liveCell,
  lrpSummary,
  min,
  now,
  s,
  stale,
  tag,
  task,
} from '../testing/convergence-world.js';
import {
  type ConvergenceConfig,
  type ConvergenceInput,
  cellDisappearedReason,
  type LRPConvergenceItem,
  mergeStartRequests,
  pendingExpiredReason,
  planConvergence,
  type TaskConvergenceItem,
} from './convergence-plan.js';

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
