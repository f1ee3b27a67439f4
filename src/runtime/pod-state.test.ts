import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { IllegalTransitionError } from '../core/index.js';
import {
  assertPhaseMove,
  type PodPhase,
  type PodState,
  phaseMoves,
  podPhases,
  podState,
} from './pod-state.js';

describe('seed 000 state table: directory × lock → state', () => {
  // One row per cell of the seed's table ("locked exclusively" / "unlocked").
  const rows: ReadonlyArray<[PodPhase, boolean, PodState]> = [
    ['embryo', true, 'embryo'],
    ['embryo', false, 'embryo'],
    ['prepare', true, 'preparing'],
    ['prepare', false, 'prepare-failed'],
    ['prepared', true, 'prepared'],
    ['prepared', false, 'prepared'],
    ['run', true, 'running'],
    ['run', false, 'exited'],
    ['exited-garbage', true, 'deleting'],
    ['exited-garbage', false, 'exited-garbage'],
    ['garbage', true, 'deleting'],
    ['garbage', false, 'garbage'],
  ];
  for (const [phase, locked, state] of rows) {
    it(`$var/${phase}/$uuid ${locked ? 'locked exclusively' : 'unlocked'} is ${state}`, () => {
      assert.equal(podState(phase, locked), state);
    });
  }
});

describe('phase moves (renames) allowed by the seed', () => {
  const allowed = new Set([
    'embryo>prepare', // rkt run/prepare: lock, then rename
    'embryo>garbage', // gc: an embryo left behind by a crash right after mkdir
    'prepare>prepared', // rkt prepare succeeded
    'prepare>run', // rkt run skips Prepared
    'prepare>garbage', // gc: failed prepare
    'prepared>run', // run-prepared
    'prepared>garbage', // gc --expire-prepared, rm
    'run>exited-garbage', // gc mark, rm
  ]);
  for (const from of podPhases) {
    for (const to of podPhases) {
      const key = `${from}>${to}`;
      if (allowed.has(key)) {
        it(`${from} → ${to} is allowed`, () => assert.doesNotThrow(() => assertPhaseMove(from, to)));
      } else {
        it(`${from} → ${to} is refused`, () => {
          assert.throws(() => assertPhaseMove(from, to, 'u'), IllegalTransitionError);
        });
      }
    }
  }
  it('the table has exactly the allowed moves', () => {
    const inTable = podPhases.flatMap((from) => phaseMoves[from].map((to) => `${from}>${to}`));
    assert.deepEqual(new Set(inTable), allowed);
  });
});
