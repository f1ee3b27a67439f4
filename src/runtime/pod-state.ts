import { IllegalTransitionError } from '../core/index.js';

/**
 * Seed 000 ("Life-cycle of a container in rocket"): a pod's state is its directory plus whether
 * its flock is held exclusively. Both tables below are the seed's, as data.
 */
export const podPhases = ['embryo', 'prepare', 'prepared', 'run', 'exited-garbage', 'garbage'] as const;
export type PodPhase = (typeof podPhases)[number];

export type PodState =
  | 'embryo'
  | 'preparing'
  | 'prepare-failed'
  | 'prepared'
  | 'running'
  | 'exited'
  | 'exited-garbage'
  | 'deleting'
  | 'garbage';

/** The seed's table: directory × (locked exclusively, unlocked) → state. */
export const stateTable: Readonly<
  Record<PodPhase, { readonly locked: PodState; readonly unlocked: PodState }>
> = {
  embryo: { locked: 'embryo', unlocked: 'embryo' }, // locks have no meaning here
  prepare: { locked: 'preparing', unlocked: 'prepare-failed' },
  prepared: { locked: 'prepared', unlocked: 'prepared' }, // locks have no meaning here
  run: { locked: 'running', unlocked: 'exited' },
  'exited-garbage': { locked: 'deleting', unlocked: 'exited-garbage' },
  garbage: { locked: 'deleting', unlocked: 'garbage' },
};

/** Phases whose lock is meaningful: only these need a lock probe to know the state. */
export const lockedPhases: ReadonlySet<PodPhase> = new Set(['prepare', 'run', 'exited-garbage', 'garbage']);

export function podState(phase: PodPhase, locked: boolean): PodState {
  const row = stateTable[phase];
  return locked ? row.locked : row.unlocked;
}

/**
 * Renames between phase directories, each made by exactly one actor of the seed:
 * prepare/run create embryos and move them on; run-prepared takes prepared → run; gc marks
 * run → exited-garbage (exited pods), prepare → garbage (failed prepares), prepared → garbage
 * (expired), embryo → garbage (stale, a crash right after mkdir); rm does the same moves for one pod. Deletion happens only from the two garbage dirs.
 */
export const phaseMoves: Readonly<Record<PodPhase, readonly PodPhase[]>> = {
  embryo: ['prepare', 'garbage'], // garbage: gc of an embryo left by a crash before its lock
  prepare: ['prepared', 'run', 'garbage'],
  prepared: ['run', 'garbage'],
  run: ['exited-garbage'],
  'exited-garbage': [],
  garbage: [],
};

export function assertPhaseMove(from: PodPhase, to: PodPhase, uuid?: string): void {
  if (!phaseMoves[from].includes(to)) throw new IllegalTransitionError('pod phase', from, to, uuid);
}

export function isPodPhase(name: string): name is PodPhase {
  return (podPhases as readonly string[]).includes(name);
}
