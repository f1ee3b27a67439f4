import { IllegalTransitionError } from '../core/index.js';

/**
 * A deploy's or teardown's lifetime (issue 19): `accepted` once its row and lock rows are written,
 * `in_progress` once a server executes it (writing, then waiting for the rollout), then
 * `succeeded` or `failed` with a reason. An accepted action can fail without ever starting (its
 * definition is unreadable to the server that takes it over).
 */
export type ActionState = 'accepted' | 'in_progress' | 'succeeded' | 'failed';

/** The states of an action that still holds its locks. */
export const liveActionStates: readonly ActionState[] = ['accepted', 'in_progress'];

export const actionStateTransitions: Readonly<Record<ActionState, readonly ActionState[]>> = {
  accepted: ['in_progress', 'failed'],
  in_progress: ['succeeded', 'failed'],
  succeeded: [],
  failed: [],
};

export function isLiveAction(state: string): boolean {
  return (liveActionStates as readonly string[]).includes(state);
}

export function assertActionMove(from: ActionState, to: ActionState, id?: string): void {
  if (!actionStateTransitions[from]?.includes(to)) throw new IllegalTransitionError('action', from, to, id);
}

/**
 * Rows written by a berth before issue 19 say `running`: an action already executing, so
 * `in_progress` (migration 2 rewrites them; this reads any that a mixed-version cluster writes).
 */
export function actionStateOf(text: string): ActionState {
  return text === 'running' ? 'in_progress' : (text as ActionState);
}

/** The stored texts of live actions, `running` included (see `actionStateOf`). */
export const liveActionStateTexts: readonly string[] = [...liveActionStates, 'running'];
