import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BerthError } from '../core/index.js';
import {
  assertSystemPhaseMove,
  type InstanceObservation,
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
