import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ActualLRP, ActualLRPState, Task, TaskState } from '../bbs/index.js';
import type { ContainerState, ExecutorContainer } from '../executor/index.js';
import { defaultCrashPolicy } from './crash-policy.js';
import {
  type LRPActualCase,
  type LRPContainerCase,
  type LRPRepAction,
  lrpReconcileTable,
  matchLRPRow,
  reconcileLRP,
  stillDeletesContainer,
} from './reconcile-table.js';
import {
  matchTaskRow,
  reconcileTask,
  type TaskCase,
  type TaskContainerCase,
  type TaskRepAction,
  taskReconcileTable,
} from './task-reconcile-table.js';

const A = 'cell-a';
const O = 'cell-o';
const now = new Date('2024-05-01T12:00:00.000Z');
const tag = { epoch: 'e1', index: 7 };
const netInfo = { address: '10.0.0.5', ports: [{ container_port: 8080, host_port: 61001 }] };

function lrpContainer(state: ContainerState, kind?: 'crashed' | 'shutdown' | 'no-image'): ExecutorContainer {
  return {
    guid: 'ig-1',
    state,
    tags: { kind: 'lrp', process_guid: 'web', index: 2, instance_guid: 'ig-1', domain: 'apps' },
    resource: { memory_mb: 128, disk_mb: 256 },
    ...(kind
      ? {
          result: {
            failed: kind !== 'shutdown',
            reason:
              kind === 'crashed'
                ? 'exit status 1'
                : kind === 'no-image'
                  ? 'Cannot find image "gone:1"'
                  : 'stopped',
            kind,
          },
        }
      : {}),
    ...(state === 'RUNNING' || state === 'CREATED' ? { net_info: netInfo } : {}),
  };
}

function actual(state: ActualLRPState, cell = '', instance = 'ig-1'): ActualLRP {
  return {
    process_guid: 'web',
    index: 2,
    domain: 'apps',
    instance_guid: instance,
    cell_id: cell,
    state,
    crash_count: 1,
    last_crashed_at: '2024-05-01T11:59:00.000Z',
    crash_reason: '',
    since: '2024-05-01T11:59:00.000Z',
    placement_error: '',
    address: '',
    ports: [],
    evacuating: false,
    modification_tag: tag,
  };
}

function actualFor(c: Exclude<LRPActualCase, 'ANY'>): ActualLRP | null {
  const byCase: Readonly<Record<Exclude<LRPActualCase, 'ANY'>, ActualLRP | null>> = {
    'No ActualLRP': null,
    UNCLAIMED: actual('UNCLAIMED'),
    'CLAIMED by A': actual('CLAIMED', A),
    'CLAIMED by O': actual('CLAIMED', O, 'ig-2'),
    'RUNNING on A': actual('RUNNING', A),
    'RUNNING on O': actual('RUNNING', O, 'ig-2'),
    CRASHED: actual('CRASHED'),
  };
  return byCase[c];
}

const actualCases: readonly Exclude<LRPActualCase, 'ANY'>[] = [
  'No ActualLRP',
  'UNCLAIMED',
  'CLAIMED by A',
  'CLAIMED by O',
  'RUNNING on A',
  'RUNNING on O',
  'CRASHED',
];

function containersFor(c: LRPContainerCase): readonly (ExecutorContainer | null)[] {
  const byCase: Readonly<Record<LRPContainerCase, readonly (ExecutorContainer | null)[]>> = {
    RESERVED: [lrpContainer('RESERVED')],
    'INITIALIZING or CREATED': [lrpContainer('INITIALIZING'), lrpContainer('CREATED')],
    RUNNING: [lrpContainer('RUNNING')],
    'COMPLETED (crashed)': [lrpContainer('COMPLETED', 'crashed')],
    'COMPLETED (shutdown)': [lrpContainer('COMPLETED', 'shutdown')],
    'COMPLETED (no image)': [lrpContainer('COMPLETED', 'no-image')],
    'No Container': [null],
  };
  return byCase[c];
}

const key = { process_guid: 'web', index: 2, domain: 'apps' };
const instanceA = { instance_guid: 'ig-1', cell_id: A };
const del = (revalidate: boolean): LRPRepAction => ({
  kind: 'delete-container',
  containerGuid: 'ig-1',
  revalidate,
});
const crashThenDelete = (
  expected: typeof tag | null,
  crashCount: number,
  reason: string,
): readonly LRPRepAction[] => [
  {
    kind: 'crash',
    key,
    instance: instanceA,
    expected,
    outcome: {
      crash_count: crashCount,
      last_crashed_at: now.toISOString(),
      state: 'UNCLAIMED',
      requestStart: true,
    },
    reason,
  },
  del(false),
];
const cadThenDelete: readonly LRPRepAction[] = [{ kind: 'remove-actual', key, expected: tag }, del(false)];
const unclaim: readonly LRPRepAction[] = [{ kind: 'unclaim-and-request-start', key, expected: tag }];
const none: readonly LRPRepAction[] = [{ kind: 'none' }];
const giveBack: readonly LRPRepAction[] = [
  {
    kind: 'give-back',
    key,
    instance: instanceA,
    expected: tag,
    placementError: 'Cannot find image "gone:1"',
  },
  del(false),
];

/**
 * What each row of the seed's table must do, written out by hand from the seed (not derived from
 * the table under test). Delete of an INITIALIZING/CREATED/RUNNING container is re-validated.
 */
const expectedByRow: Readonly<Record<string, readonly LRPRepAction[]>> = {
  'RESERVED | ANY': none,
  'INITIALIZING or CREATED | No ActualLRP': [del(true)],
  'INITIALIZING or CREATED | UNCLAIMED': [{ kind: 'claim', key, instance: instanceA, expected: tag }],
  'INITIALIZING or CREATED | CLAIMED by A': none,
  'INITIALIZING or CREATED | CLAIMED by O': [del(true)],
  'INITIALIZING or CREATED | RUNNING on A': none,
  'INITIALIZING or CREATED | RUNNING on O': [del(true)],
  'INITIALIZING or CREATED | CRASHED': [del(true)],
  'RUNNING | No ActualLRP': [{ kind: 'create-running', key, instance: instanceA, netInfo }],
  'RUNNING | UNCLAIMED': [{ kind: 'start', key, instance: instanceA, netInfo, expected: tag }],
  'RUNNING | CLAIMED by A': [{ kind: 'start', key, instance: instanceA, netInfo, expected: tag }],
  'RUNNING | CLAIMED by O': [{ kind: 'start', key, instance: instanceA, netInfo, expected: tag }],
  'RUNNING | RUNNING on A': none,
  'RUNNING | RUNNING on O': [del(true)],
  'RUNNING | CRASHED': [{ kind: 'start', key, instance: instanceA, netInfo, expected: tag }],
  'COMPLETED (crashed) | No ActualLRP': crashThenDelete(null, 1, 'exit status 1'),
  'COMPLETED (crashed) | UNCLAIMED': [del(false)],
  'COMPLETED (crashed) | CLAIMED by A': crashThenDelete(tag, 2, 'exit status 1'),
  'COMPLETED (crashed) | STARING on O': [del(false)],
  'COMPLETED (crashed) | RUNNING on A': crashThenDelete(tag, 2, 'exit status 1'),
  'COMPLETED (crashed) | RUNNING on O': [del(false)],
  'COMPLETED (crashed) | CRASHED': [del(false)],
  'COMPLETED (shutdown) | No ActualLRP': crashThenDelete(null, 1, 'stopped'),
  'COMPLETED (shutdown) | UNCLAIMED': [del(false)],
  'COMPLETED (shutdown) | CLAIMED by A': cadThenDelete,
  'COMPLETED (shutdown) | STARING on O': [del(false)],
  'COMPLETED (shutdown) | RUNNING on A': cadThenDelete,
  'COMPLETED (shutdown) | RUNNING on O': [del(false)],
  'COMPLETED (shutdown) | CRASHED': [del(false)],
  'COMPLETED (no image) | No ActualLRP': [del(false)],
  'COMPLETED (no image) | UNCLAIMED': [del(false)],
  'COMPLETED (no image) | CLAIMED by A': giveBack,
  'COMPLETED (no image) | CLAIMED by O': [del(false)],
  'COMPLETED (no image) | RUNNING on A': giveBack,
  'COMPLETED (no image) | RUNNING on O': [del(false)],
  'COMPLETED (no image) | CRASHED': [del(false)],
  'No Container | CLAIMED by A': unclaim,
  'No Container | RUNNING on A': unclaim,
  'No Container | No ActualLRP': none,
  'No Container | UNCLAIMED': none,
  'No Container | CLAIMED by O': none,
  'No Container | RUNNING on O': none,
  'No Container | CRASHED': none,
};

describe('rep: Harmonizing ActualLRPs with Container State (seed 002), one test per row', () => {
  for (const r of lrpReconcileTable) {
    it(`${r.name} → ${r.action}${r.source === 'berth' ? ' (berth completes the seed)' : ''}`, () => {
      const expected = expectedByRow[r.name];
      assert.ok(expected, `the test lists row ${r.name}`);
      const cases = r.actual === 'ANY' ? actualCases : [r.actual];
      for (const container of containersFor(r.container)) {
        for (const c of cases) {
          const input = { container, actual: actualFor(c), cellId: A, now, policy: defaultCrashPolicy };
          assert.equal(matchLRPRow(input), r);
          const revalidate =
            container !== null && ['INITIALIZING', 'CREATED', 'RUNNING'].includes(container.state);
          const want: readonly LRPRepAction[] = expected.map((a) =>
            a.kind === 'delete-container' ? { ...a, revalidate } : a,
          );
          assert.deepEqual(reconcileLRP(input), want, `${container?.state ?? 'no container'} × ${c}`);
        }
      }
    });
  }
  it('the seed has 31 rows and every one is in the table', () => {
    assert.equal(lrpReconcileTable.filter((r) => r.source === 'seed').length, 31);
    assert.equal(Object.keys(expectedByRow).length, lrpReconcileTable.length);
  });
  it('every container state × ActualLRP case has exactly one row', () => {
    const states: readonly ContainerState[] = ['RESERVED', 'INITIALIZING', 'CREATED', 'RUNNING', 'COMPLETED'];
    for (const state of states) {
      for (const kind of ['crashed', 'shutdown', 'no-image'] as const) {
        for (const c of actualCases) {
          const container = lrpContainer(state, state === 'COMPLETED' ? kind : undefined);
          assert.doesNotThrow(() => matchLRPRow({ container, actual: actualFor(c), cellId: A }));
        }
      }
    }
    const names = new Set(lrpReconcileTable.map((r) => `${r.container}|${r.actual}`));
    assert.equal(names.size, lrpReconcileTable.length);
  });
});

describe('rep: LRP details the table implies', () => {
  it('same cell, different instance_guid is "by O": an old container never acts on a new claim', () => {
    const container = lrpContainer('COMPLETED', 'crashed');
    const input = {
      container,
      actual: actual('CLAIMED', A, 'ig-new'),
      cellId: A,
      now,
      policy: defaultCrashPolicy,
    };
    assert.equal(matchLRPRow(input).name, 'COMPLETED (crashed) | STARING on O');
  });
  it('COMPLETED without a result counts as crashed, so the instance is not lost', () => {
    const container: ExecutorContainer = { ...lrpContainer('COMPLETED'), state: 'COMPLETED' };
    const input = { container, actual: actual('RUNNING', A), cellId: A, now, policy: defaultCrashPolicy };
    assert.equal(matchLRPRow(input).container, 'COMPLETED (crashed)');
  });
  it('the crash dance uses the crash policy (third crash → CRASHED, no start)', () => {
    const a = { ...actual('RUNNING', A), crash_count: 2 };
    const [crash] = reconcileLRP({
      container: lrpContainer('COMPLETED', 'crashed'),
      actual: a,
      cellId: A,
      now,
      policy: defaultCrashPolicy,
    });
    assert.equal(crash?.kind, 'crash');
    if (crash?.kind === 'crash') {
      assert.equal(crash.outcome.state, 'CRASHED');
      assert.equal(crash.outcome.requestStart, false);
      assert.equal(crash.outcome.crash_count, 3);
    }
  });
  it('re-validation: a delete planned on a stale view is dropped when the fresh ActualLRP says A owns it', () => {
    const container = lrpContainer('RUNNING');
    const stale = {
      container,
      actual: actual('RUNNING', O, 'ig-2'),
      cellId: A,
      now,
      policy: defaultCrashPolicy,
    };
    assert.equal(stillDeletesContainer(stale), true);
    const fresh = { ...stale, actual: actual('RUNNING', A) };
    assert.equal(stillDeletesContainer(fresh), false);
  });
  it('refuses a pair of different instances or a task container', () => {
    const other = { ...actual('RUNNING', A), index: 3 };
    assert.throws(() => matchLRPRow({ container: lrpContainer('RUNNING'), actual: other, cellId: A }));
    const taskContainer: ExecutorContainer = {
      ...lrpContainer('RUNNING'),
      tags: { kind: 'task', task_guid: 't', domain: 'd' },
    };
    assert.throws(() => matchLRPRow({ container: taskContainer, actual: null, cellId: A }));
  });
});

// ---------------------------------------------------------------------------------------------

function taskContainer(state: ContainerState, result?: ExecutorContainer['result']): ExecutorContainer {
  return {
    guid: 'task-1',
    state,
    tags: { kind: 'task', task_guid: 'task-1', domain: 'jobs' },
    resource: { memory_mb: 64, disk_mb: 64 },
    ...(result ? { result } : {}),
  };
}

function task(state: TaskState, cell = ''): Task {
  return {
    task_guid: 'task-1',
    domain: 'jobs',
    image: 'busybox',
    env: {},
    memory_mb: 64,
    disk_mb: 64,
    result_file: '/tmp/result',
    completion_callback_url: '',
    placement_tags: [],
    state,
    cell_id: cell,
    result: '',
    failed: false,
    failure_reason: '',
    created_at: '2024-05-01T11:00:00.000Z',
    updated_at: '2024-05-01T11:00:00.000Z',
    first_completed_at: null,
    modification_tag: tag,
  };
}

const taskCases: Readonly<Record<TaskCase, readonly (Task | null)[]>> = {
  'No Task': [null],
  PENDING: [task('PENDING')],
  'RUNNING on A': [task('RUNNING', A)],
  'RUNNING on O': [task('RUNNING', O)],
  'COMPLETED or RESOLVING': [task('COMPLETED', A), task('RESOLVING', A)],
};
const ok = { failed: false, reason: '', kind: 'crashed' as const };
const taskContainers: Readonly<Record<TaskContainerCase, readonly (ExecutorContainer | null)[]>> = {
  RESERVED: [taskContainer('RESERVED')],
  'INITIALIZING, CREATED or RUNNING': [
    taskContainer('INITIALIZING'),
    taskContainer('CREATED'),
    taskContainer('RUNNING'),
  ],
  COMPLETED: [taskContainer('COMPLETED', ok)],
  'No Container': [null],
};

const tdel = (revalidate: boolean): TaskRepAction => ({
  kind: 'delete-container',
  containerGuid: 'task-1',
  revalidate,
});
const startTask: TaskRepAction = { kind: 'start-task', taskGuid: 'task-1', cellId: A, expected: tag };
const tnone: readonly TaskRepAction[] = [{ kind: 'none' }];
const expectedTaskRows: Readonly<Record<string, readonly TaskRepAction[]>> = {
  'RESERVED | No Task': [tdel(false)],
  'RESERVED | PENDING': [startTask, { kind: 'run-container', containerGuid: 'task-1' }],
  'RESERVED | RUNNING on A': [{ kind: 'run-container', containerGuid: 'task-1' }],
  'RESERVED | RUNNING on O': [tdel(false)],
  'RESERVED | COMPLETED or RESOLVING': [tdel(false)],
  'INITIALIZING, CREATED or RUNNING | No Task': [tdel(true)],
  'INITIALIZING, CREATED or RUNNING | PENDING': [startTask],
  'INITIALIZING, CREATED or RUNNING | RUNNING on A': tnone,
  'INITIALIZING, CREATED or RUNNING | RUNNING on O': [tdel(true)],
  'INITIALIZING, CREATED or RUNNING | COMPLETED or RESOLVING': [tdel(true)],
  'COMPLETED | No Task': [tdel(false)],
  'COMPLETED | PENDING': [tdel(false)],
  'COMPLETED | RUNNING on A': [
    {
      kind: 'complete-task',
      taskGuid: 'task-1',
      cellId: A,
      expected: tag,
      failed: false,
      failureReason: '',
      resultFile: '/tmp/result',
    },
    tdel(false),
  ],
  'COMPLETED | RUNNING on O': [tdel(false)],
  'COMPLETED | COMPLETED or RESOLVING': [tdel(false)],
  'No Container | No Task': tnone,
  'No Container | PENDING': tnone,
  'No Container | RUNNING on A': [
    {
      kind: 'fail-task',
      taskGuid: 'task-1',
      cellId: A,
      expected: tag,
      failureReason: 'container vanished',
      revalidate: true,
    },
  ],
  'No Container | RUNNING on O': tnone,
  'No Container | COMPLETED or RESOLVING': tnone,
};

describe('rep: Harmonizing Tasks with Container State, one test per row', () => {
  for (const r of taskReconcileTable) {
    it(`${r.name} → ${r.action}`, () => {
      const expected = expectedTaskRows[r.name];
      assert.ok(expected, `the test lists row ${r.name}`);
      for (const container of taskContainers[r.container]) {
        for (const t of taskCases[r.task]) {
          assert.equal(matchTaskRow(container, t, A), r);
          const revalidate =
            container !== null && ['INITIALIZING', 'CREATED', 'RUNNING'].includes(container.state);
          const want: readonly TaskRepAction[] = expected.map((a) =>
            a.kind === 'delete-container' ? { ...a, revalidate } : a,
          );
          assert.deepEqual(reconcileTask(container, t, A), want);
        }
      }
    });
  }
  it('covers every container case × task case once', () => {
    assert.equal(taskReconcileTable.length, 20);
    assert.equal(Object.keys(expectedTaskRows).length, 20);
  });
  it('a failed run completes failed with the executor reason and reads no result file', () => {
    const c = taskContainer('COMPLETED', { failed: true, reason: 'exit status 3', kind: 'crashed' });
    const [complete] = reconcileTask(c, task('RUNNING', A), A);
    assert.deepEqual(complete, {
      kind: 'complete-task',
      taskGuid: 'task-1',
      cellId: A,
      expected: tag,
      failed: true,
      failureReason: 'exit status 3',
      resultFile: '',
    });
  });
  it('a container stopped while its task ran (evacuation timeout) completes the task failed', () => {
    const c = taskContainer('COMPLETED', {
      failed: false,
      reason: 'cell evacuated before completion',
      kind: 'shutdown',
    });
    const [complete] = reconcileTask(c, task('RUNNING', A), A);
    assert.equal(complete?.kind === 'complete-task' && complete.failed, true);
    assert.equal(
      complete?.kind === 'complete-task' && complete.failureReason,
      'cell evacuated before completion',
    );
  });
  it('at most once: no row runs a container unless A holds (or is about to CAS for) the task', () => {
    for (const r of taskReconcileTable) {
      const runs = expectedTaskRows[r.name]?.some((a) => a.kind === 'run-container');
      if (runs) assert.ok(r.task === 'PENDING' || r.task === 'RUNNING on A', r.name);
      if (runs && r.task === 'PENDING') assert.equal(expectedTaskRows[r.name]?.[0]?.kind, 'start-task');
    }
  });
  it('refuses an LRP container', () => {
    assert.throws(() => reconcileTask(lrpContainer('RUNNING'), null, A));
  });
});
