import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BerthError } from '../core/index.js';
import {
  assertSystemPhaseMove,
  type InstanceObservation,
  phaseOnAccept,
  phaseOnFinish,
  type ServiceState,
  type SystemPhase,
  serviceState,
  systemPhaseTransitions,
  systemStatus,
} from './system-status.js';

const phases = Object.keys(systemPhaseTransitions) as SystemPhase[];
const arrowsBySeed = new Set([
  'gone -> pending',
  'pending -> failed',
  'pending -> active',
  'pending -> deleting',
  'failed -> deleting',
  // berth's reading: redeploying a failed system starts it over.
  'failed -> pending',
  'active -> deleting',
  'deleting -> gone',
]);

describe('system phases (seed 004 "State Diagram")', () => {
  for (const from of phases) {
    for (const to of phases) {
      const ok = arrowsBySeed.has(`${from} -> ${to}`);
      it(`${from} -> ${to}: ${ok ? 'allowed' : 'forbidden'}`, () => {
        if (ok) assertSystemPhaseMove(from, to);
        else
          assert.throws(
            () => assertSystemPhaseMove(from, to, 'shop'),
            (e: unknown) => e instanceof BerthError && e.code === 'illegal_transition',
          );
      });
    }
  }
});

describe('phase steps of actions: every step is an arrow of the table (or stays put)', () => {
  const accept: readonly [string, 'deploy' | 'teardown', SystemPhase, SystemPhase][] = [
    ['a deploy creates a system pending', 'deploy', 'gone', 'pending'],
    ['a deploy of a pending system (another path) keeps it pending', 'deploy', 'pending', 'pending'],
    ['a redeploy of a failed system starts it over', 'deploy', 'failed', 'pending'],
    ['a redeploy of an active system stays in the box', 'deploy', 'active', 'active'],
    ['a teardown deletes from active', 'teardown', 'active', 'deleting'],
    ['a teardown deletes from failed', 'teardown', 'failed', 'deleting'],
    ['a teardown again after a failed one', 'teardown', 'deleting', 'deleting'],
  ];
  for (const [name, kind, from, to] of accept)
    it(`accept: ${name}`, () => {
      assert.deepEqual(phaseOnAccept(kind, from), { to, reason: '' });
      if (from !== to) assertSystemPhaseMove(from, to);
    });
  it('accept: a deploy of a system being deleted is no arrow of the table', () =>
    assert.throws(() => {
      const step = phaseOnAccept('deploy', 'deleting');
      assertSystemPhaseMove('deleting', step.to, 'shop');
    }, /Cannot move system shop from deleting to pending/));

  const finish: readonly [
    string,
    'deploy' | 'teardown',
    'succeeded' | 'failed',
    SystemPhase,
    SystemPhase,
    string,
  ][] = [
    ['a first deploy that rolled out: active', 'deploy', 'succeeded', 'pending', 'active', ''],
    [
      'a first deploy that failed: failed with the reason',
      'deploy',
      'failed',
      'pending',
      'failed',
      'no room',
    ],
    [
      'a redeploy of an active system that failed: degraded condition',
      'deploy',
      'failed',
      'active',
      'active',
      'last deploy failed: no room',
    ],
    ['a redeploy that rolled out clears the condition', 'deploy', 'succeeded', 'active', 'active', ''],
    [
      'a deploy of another path of a failed system leaves it failed',
      'deploy',
      'succeeded',
      'failed',
      'failed',
      'old',
    ],
    ['a teardown that finished: gone', 'teardown', 'succeeded', 'deleting', 'gone', ''],
    [
      'a teardown that failed stays deleting with the reason',
      'teardown',
      'failed',
      'deleting',
      'deleting',
      'no room',
    ],
  ];
  for (const [name, kind, outcome, from, to, reason] of finish)
    it(`finish: ${name}`, () => {
      assert.deepEqual(phaseOnFinish(kind, outcome, from, 'no room', 'old'), { to, reason });
      if (from !== to) assertSystemPhaseMove(from, to);
    });
});

describe('systemStatus (seed 004 pseudocode)', () => {
  const rows: readonly [string, SystemPhase, readonly ServiceState[], string][] = [
    ['pending while first created', 'pending', ['degraded'], 'pending'],
    ['deleting overrides services', 'deleting', ['stable'], 'deleting'],
    ['gone once deleted', 'gone', [], 'gone'],
    [
      '"if (any service is degraded): return degraded"',
      'active',
      ['stable', 'updating', 'scaling', 'degraded'],
      'degraded',
    ],
    [
      '"if (any service is updating): return updating"',
      'active',
      ['stable', 'scaling', 'updating'],
      'updating',
    ],
    [
      'a service being deleted by a deploy counts as updating',
      'active',
      ['stable', 'deleting', 'scaling'],
      'updating',
    ],
    ['"if (any service is scaling): return scaling"', 'active', ['stable', 'scaling'], 'scaling'],
    ['"return stable"', 'active', ['stable', 'stable'], 'stable'],
    ['no services (only jobs): stable', 'active', [], 'stable'],
  ];
  for (const [name, phase, services, want] of rows) {
    it(name, () => assert.deepEqual(systemStatus({ phase, services }), { state: want }));
  }
  it('an active system whose last deploy failed is degraded with the reason, whatever its services', () =>
    assert.deepEqual(
      systemStatus({ phase: 'active', failure_reason: 'last deploy failed: x', services: ['stable'] }),
      { state: 'degraded', reason: 'last deploy failed: x' },
    ));
  it('failed carries its reason', () => {
    assert.deepEqual(
      systemStatus({ phase: 'failed', failure_reason: 'image bb:9 not found', services: [] }),
      {
        state: 'failed',
        reason: 'image bb:9 not found',
      },
    );
  });
});

function inst(
  index: number,
  state: InstanceObservation['state'],
  version = 'v2',
  crash_count = 0,
): InstanceObservation {
  return { index, version, state, crash_count };
}

describe('serviceState from instances', () => {
  const rows: readonly [string, 'alive' | 'dying', number, readonly InstanceObservation[], ServiceState][] = [
    ['Dying: deleting', 'dying', 2, [inst(0, 'RUNNING'), inst(1, 'RUNNING')], 'deleting'],
    [
      'a CRASHED instance: degraded',
      'alive',
      2,
      [inst(0, 'RUNNING'), inst(1, 'CRASHED', 'v2', 3)],
      'degraded',
    ],
    [
      'restarted after a crash, not yet running: degraded',
      'alive',
      2,
      [inst(0, 'RUNNING'), inst(1, 'UNCLAIMED', 'v2', 1)],
      'degraded',
    ],
    [
      'degraded beats updating',
      'alive',
      2,
      [inst(0, 'RUNNING', 'v1'), inst(1, 'CRASHED', 'v2', 3)],
      'degraded',
    ],
    [
      'old version instances: updating',
      'alive',
      2,
      [inst(0, 'RUNNING', 'v1'), inst(1, 'RUNNING'), inst(0, 'CLAIMED')],
      'updating',
    ],
    [
      'fewer instances than desired: scaling',
      'alive',
      3,
      [inst(0, 'RUNNING'), inst(1, 'RUNNING')],
      'scaling',
    ],
    ['more instances than desired: scaling', 'alive', 1, [inst(0, 'RUNNING'), inst(1, 'RUNNING')], 'scaling'],
    ['new instance starting: scaling', 'alive', 2, [inst(0, 'RUNNING'), inst(1, 'UNCLAIMED')], 'scaling'],
    ['claimed, monitor not passed yet: scaling', 'alive', 1, [inst(0, 'CLAIMED')], 'scaling'],
    [
      'all desired RUNNING the current version: stable',
      'alive',
      2,
      [inst(0, 'RUNNING'), inst(1, 'RUNNING')],
      'stable',
    ],
    ['zero desired, zero instances: stable', 'alive', 0, [], 'stable'],
  ];
  for (const [name, life, desired, instances, want] of rows) {
    it(name, () =>
      assert.equal(
        serviceState({ life, desired_instances: desired, current_version: 'v2', instances }),
        want,
      ),
    );
  }
});
