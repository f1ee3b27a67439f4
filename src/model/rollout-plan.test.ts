import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BerthError } from '../core/index.js';
import {
  type ActionState,
  actionStateOf,
  actionStateTransitions,
  assertActionMove,
  isLiveAction,
} from './action-states.js';
import {
  planRollout,
  planTeardown,
  type RolloutInstance,
  type RolloutJob,
  type RolloutObservation,
  type RolloutService,
  rememberProblems,
  serviceProblem,
} from './rollout-plan.js';

const running = (index: number): RolloutInstance => ({
  index,
  state: 'RUNNING',
  crash_count: 0,
  crash_reason: '',
  placement_error: '',
});
const service = (path: string, desired: number, instances: RolloutInstance[], old = 0): RolloutService => ({
  path,
  desired,
  instances,
  old_instances: old,
});
const job = (path: string, state: RolloutJob['state'], reason = ''): RolloutJob => ({ path, state, reason });
const observe = (o: Partial<RolloutObservation>): RolloutObservation => ({
  services: [],
  jobs: [],
  started_ms: 1_000,
  timeout_ms: 60_000,
  now_ms: 2_000,
  ...o,
});

describe('planRollout: a deploy waits until its services run and its jobs completed (issue 19)', () => {
  it('rule 1: a job that completed failed fails the deploy at once, with its reason', () => {
    const v = planRollout(
      observe({ services: [service('/web', 1, [running(0)])], jobs: [job('/migrate', 'failed', 'exit 3')] }),
    );
    assert.deepEqual(v.kind === 'failed' && v.reason, 'job /migrate failed: exit 3');
  });

  it('rule 2: every service at its count RUNNING the new version and every job completed: rolled out', () => {
    const v = planRollout(
      observe({
        services: [service('/web', 2, [running(0), running(1)]), service('/db', 1, [running(0)])],
        jobs: [job('/migrate', 'completed')],
      }),
    );
    assert.equal(v.kind, 'rolled-out');
    assert.deepEqual(
      [v.progress.services_ready, v.progress.instances_ready, v.progress.instances_desired],
      [2, 3, 3],
    );
    assert.equal(planRollout(observe({})).kind, 'rolled-out', 'nothing under the path: nothing to wait for');
  });

  it('rule 2: still waiting while an instance starts, an old version runs, a retired index lingers or a job runs', () => {
    const starting = { ...running(1), state: 'CLAIMED' as const };
    for (const [what, o] of [
      ['starting', observe({ services: [service('/web', 2, [running(0), starting])] })],
      ['old version', observe({ services: [service('/web', 1, [running(0)], 1)] })],
      ['retired index', observe({ services: [service('/web', 1, [running(0), running(1)])] })],
      ['job running', observe({ jobs: [job('/migrate', 'running')] })],
      ['job gone before its outcome was seen', observe({ jobs: [job('/migrate', 'gone')] })],
    ] as const) {
      const v = planRollout(o);
      assert.equal(v.kind, 'waiting', what);
      assert.equal(v.progress.waiting_on.length, 1, what);
    }
  });

  it('rule 3: past its timeout from acceptance, it fails naming each service and why', () => {
    const noImage = {
      ...running(0),
      state: 'UNCLAIMED' as const,
      placement_error: 'Cannot find image "nope:1"',
    };
    const crashed = {
      ...running(0),
      state: 'CRASHED' as const,
      crash_count: 3,
      crash_reason: 'exited with status 1',
    };
    const v = planRollout(
      observe({
        services: [service('/a', 1, [noImage]), service('/b', 1, [crashed]), service('/c', 2, [running(0)])],
        now_ms: 61_000,
      }),
    );
    assert.equal(v.kind, 'failed');
    assert.equal(
      v.kind === 'failed' && v.reason,
      'not rolled out within 60s: /a: instance 0 cannot be placed: Cannot find image "nope:1"; ' +
        '/b: crash loop: instance 0 crashed 3 time(s), last: exited with status 1; /c: 1/2 instances running',
    );
    assert.equal(planRollout(observe({ services: [service('/c', 2, [])], now_ms: 60_999 })).kind, 'waiting');
  });

  it('rule 3: a placement error seen in an earlier round names the service even if the instance is claimed again at the timeout', () => {
    const noImage = { ...running(0), state: 'UNCLAIMED' as const, placement_error: 'Cannot find image "x"' };
    const first = observe({ services: [service('/x', 1, [noImage])] });
    const remembered = rememberProblems(first);
    const claimed = { ...running(0), state: 'CLAIMED' as const };
    const later = observe({ services: [service('/x', 1, [claimed])], now_ms: 61_000, remembered });
    const v = planRollout(later);
    assert.equal(
      v.kind === 'failed' && v.reason,
      'not rolled out within 60s: /x: instance 0 cannot be placed: Cannot find image "x"',
    );
    assert.deepEqual(rememberProblems(later), remembered, 'kept while nothing more telling is seen');
  });

  it('rule 4: before its timeout it waits, whatever the instances say', () => {
    const crashed = { ...running(0), state: 'CRASHED' as const, crash_count: 9 };
    assert.equal(planRollout(observe({ services: [service('/b', 1, [crashed])] })).kind, 'waiting');
  });

  it('a service problem prefers a placement error, then the worst crash loop, then the count', () => {
    const crashedOnce = { ...running(0), state: 'UNCLAIMED' as const, crash_count: 1, crash_reason: 'oom' };
    const crashedTwice = { ...running(1), state: 'CRASHED' as const, crash_count: 2, crash_reason: 'exit 2' };
    assert.match(serviceProblem(service('/s', 2, [crashedOnce, crashedTwice])), /instance 1 crashed 2 time/);
    const unplaced = { ...running(2), state: 'UNCLAIMED' as const, placement_error: 'no room' };
    assert.match(
      serviceProblem(service('/s', 3, [crashedOnce, crashedTwice, unplaced])),
      /instance 2 cannot be placed: no room/,
    );
    assert.equal(
      serviceProblem(service('/s', 2, [running(0)], 1)),
      '/s: 1/2 instances running, 1 of the old version left',
    );
  });
});

describe('planTeardown: a teardown lasts until everything of the system is gone', () => {
  const left = {
    services: 0,
    desired_lrps: 0,
    instances: 0,
    tasks: 0,
    started_ms: 0,
    timeout_ms: 1_000,
    now_ms: 10,
  };
  it('nothing left: gone', () => assert.deepEqual(planTeardown(left), { kind: 'gone' }));
  it('something left: waits, saying what', () =>
    assert.deepEqual(planTeardown({ ...left, instances: 2, tasks: 1 }), {
      kind: 'waiting',
      left: '2 instance(s), 1 task(s)',
    }));
  it('past its timeout: fails saying what is left', () =>
    assert.deepEqual(planTeardown({ ...left, services: 1, now_ms: 1_000 }), {
      kind: 'failed',
      reason: 'not torn down within 1s: 1 service(s) left',
    }));
});

describe('action states: accepted → in_progress → succeeded | failed', () => {
  const states = Object.keys(actionStateTransitions) as ActionState[];
  const allowed = new Set([
    'accepted -> in_progress',
    'accepted -> failed',
    'in_progress -> succeeded',
    'in_progress -> failed',
  ]);
  for (const from of states)
    for (const to of states) {
      const ok = allowed.has(`${from} -> ${to}`);
      it(`${from} -> ${to}: ${ok ? 'allowed' : 'forbidden'}`, () => {
        if (ok) assertActionMove(from, to);
        else
          assert.throws(
            () => assertActionMove(from, to, 'd-1'),
            (e: unknown) => e instanceof BerthError && e.code === 'illegal_transition',
          );
      });
    }
  it('only accepted and in_progress hold locks; a pre-issue-19 `running` row reads as in_progress', () => {
    assert.deepEqual(
      states.filter((s) => isLiveAction(s)),
      ['accepted', 'in_progress'],
    );
    assert.equal(actionStateOf('running'), 'in_progress');
  });
});
