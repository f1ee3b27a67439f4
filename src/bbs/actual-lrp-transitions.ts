import { IllegalTransitionError } from '../core/index.js';
import type { ActualLRPState } from './bbs-types.js';

/**
 * The ActualLRP state machine of seed 002, as Diego's BBS enforces it. A same-state move is a
 * change of the record without a change of state and is listed where the seed needs one:
 * UNCLAIMED→UNCLAIMED (placement error, re-emitted start), CLAIMED→CLAIMED (the claiming cell
 * claims again), RUNNING→RUNNING (new net info, or another cell reports it runs the instance).
 * Deleting a record is not a state; the store checks removal separately.
 */
export const actualLrpTransitions: Readonly<Record<ActualLRPState, readonly ActualLRPState[]>> = {
  // claimed by the auction winner; RUNNING when a cell finds it runs an unclaimed instance
  UNCLAIMED: ['UNCLAIMED', 'CLAIMED', 'RUNNING'],
  // crash < 3 or no container → UNCLAIMED; crash ≥ 3 → CRASHED
  CLAIMED: ['UNCLAIMED', 'CLAIMED', 'RUNNING', 'CRASHED'],
  // a RUNNING instance is never claimed again: it must crash or be unclaimed first
  RUNNING: ['UNCLAIMED', 'RUNNING', 'CRASHED'],
  // the converger restarts it (UNCLAIMED) or a cell reports it is in fact running
  CRASHED: ['UNCLAIMED', 'RUNNING'],
};

export const actualLrpStates: readonly ActualLRPState[] = ['UNCLAIMED', 'CLAIMED', 'RUNNING', 'CRASHED'];

export function canTransitionActualLRP(from: ActualLRPState, to: ActualLRPState): boolean {
  return actualLrpTransitions[from].includes(to);
}

export function assertActualLRPTransition(from: ActualLRPState, to: ActualLRPState, subject?: string): void {
  if (!canTransitionActualLRP(from, to)) throw new IllegalTransitionError('ActualLRP', from, to, subject);
}
