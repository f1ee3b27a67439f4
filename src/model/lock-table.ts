import { InvalidArgumentError } from '../core/index.js';
import type { LockingActionKind } from './entity-action-kinds.js';
import { LockHeldError } from './model-errors.js';
import { ancestors, isTreePath } from './tree-path.js';

/**
 * Seed 004 "IntentionLock": "a non-blocking lock supporting exclusive and intention-exclusive lock
 * modes" — only these two; Lattice has no shared modes (no S, IS, SIX).
 */
export type LockMode = 'IX' | 'X';

export const lockModes: readonly LockMode[] = ['IX', 'X'];

/**
 * The compatibility matrix, [held][wanted]. Seed 004: X "will succeed if the lock is not already
 * locked in either exclusive or intention-exclusive mode"; IX "will succeed if the lock is not
 * already locked in exclusive, but it is okay for the lock to already be locked with
 * intention-exclusive" (the seed writes "exclusive" twice; the second is plainly IX).
 */
export const lockCompatibility: Readonly<Record<LockMode, Readonly<Record<LockMode, boolean>>>> = {
  IX: { IX: true, X: false },
  X: { IX: false, X: false },
};

export type LifecycleAction =
  | { readonly kind: 'deploy'; readonly path: string }
  | { readonly kind: 'teardown' };

export interface LockRequest {
  readonly path: string;
  readonly mode: LockMode;
}

/** A held lock: a row in the store, written in the same transaction as the action's own record. */
export interface LockRow extends LockRequest {
  readonly system: string;
  readonly action_id: string;
  readonly action: LockingActionKind;
  /** The deploy's path, or `/` for a teardown: what the error message names. */
  readonly action_path: string;
}

/**
 * Seed 004 "LifecycleActionManager": a deploy of `/a/b/c/d` locks `/`, `/a`, `/a/b`, `/a/b/c`
 * intention-exclusive and `/a/b/c/d` exclusive; "a teardown effects the whole system", X on `/`.
 * A deploy of `/` is the whole system too: X on `/`.
 */
export function planLocks(action: LifecycleAction): LockRequest[] {
  if (action.kind === 'teardown') return [{ path: '/', mode: 'X' }];
  if (!isTreePath(action.path)) {
    throw new InvalidArgumentError(`Cannot lock "${action.path}": not a path like /web/api`, {
      path: action.path,
    });
  }
  return [
    ...ancestors(action.path).map((path) => ({ path, mode: 'IX' as const })),
    { path: action.path, mode: 'X' },
  ];
}

/** The rows an action writes when it is accepted. */
export function lockRowsFor(system: string, actionId: string, action: LifecycleAction): LockRow[] {
  const actionPath = action.kind === 'teardown' ? '/' : action.path;
  return planLocks(action).map((r) => ({
    ...r,
    system,
    action_id: actionId,
    action: action.kind,
    action_path: actionPath,
  }));
}

export type LockCheck = { readonly ok: true } | { readonly ok: false; readonly error: LockHeldError };

/**
 * All or nothing, at once: the first held row (of another action, same system) whose mode is
 * incompatible with a wanted one refuses the whole request, naming the holder. Nothing queues.
 */
export function checkLocks(held: readonly LockRow[], wanted: readonly LockRow[]): LockCheck {
  for (const w of wanted) {
    for (const h of held) {
      if (h.system !== w.system || h.path !== w.path || h.action_id === w.action_id) continue;
      if (!lockCompatibility[h.mode][w.mode]) {
        const what = w.action === 'teardown' ? 'tear down' : `${w.action} ${w.action_path}`;
        return {
          ok: false,
          error: new LockHeldError(w.system, what, {
            action_id: h.action_id,
            action: h.action,
            action_path: h.action_path,
            path: h.path,
            mode: h.mode,
          }),
        };
      }
    }
  }
  return { ok: true };
}

/** What an ended (or dead-owner) action's release removes. */
export function releaseLocks(held: readonly LockRow[], actionId: string): LockRow[] {
  return held.filter((h) => h.action_id !== actionId);
}
