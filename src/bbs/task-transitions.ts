import { IllegalTransitionError } from '../core/index.js';
import type { TaskState } from './bbs-types.js';

/**
 * Tasks run at most once (DESIGN.md "cluster"): PENDING → RUNNING → COMPLETED → RESOLVING →
 * deleted. PENDING → COMPLETED is a failure before placement or a cancel; RESOLVING → COMPLETED is
 * a failed callback delivery handed back for a retry (or a stuck resolve demoted by the converger).
 * Nothing ever goes back to PENDING or RUNNING: that would run the task twice.
 */
export const taskTransitions: Readonly<Record<TaskState, readonly TaskState[]>> = {
  PENDING: ['RUNNING', 'COMPLETED'],
  RUNNING: ['COMPLETED'],
  COMPLETED: ['RESOLVING'],
  RESOLVING: ['COMPLETED'],
};

export const taskStates: readonly TaskState[] = ['PENDING', 'RUNNING', 'COMPLETED', 'RESOLVING'];

/** A task record may be deleted only once it has completed. */
export const taskDeletableStates: readonly TaskState[] = ['COMPLETED', 'RESOLVING'];

export function canTransitionTask(from: TaskState, to: TaskState): boolean {
  return taskTransitions[from].includes(to);
}

export function assertTaskTransition(from: TaskState, to: TaskState, subject?: string): void {
  if (!canTransitionTask(from, to)) throw new IllegalTransitionError('Task', from, to, subject);
}
