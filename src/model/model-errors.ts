import { BerthError } from '../core/index.js';
import type { LockingActionKind } from './entity-action-kinds.js';

/** The action that holds a system lock (seed 004: a conflicting action "will fail" at once). */
export interface LockHolder {
  readonly action_id: string;
  readonly action: LockingActionKind;
  /** The path the holder acts on: its deploy path, or `/` for a teardown. */
  readonly action_path: string;
  /** The locked node that conflicts, and the mode the holder has on it. */
  readonly path: string;
  readonly mode: string;
}

/** A lifecycle action refused because another one holds a conflicting intention lock. */
export class LockHeldError extends BerthError {
  readonly holder: LockHolder;

  constructor(system: string, wanted: string, holder: LockHolder) {
    super(
      'lock_held',
      `Cannot ${wanted} in system "${system}": ${holder.action} ${holder.action_id} of ${holder.action_path} holds ${holder.mode} on ${holder.path}`,
      { system, wanted, holder },
    );
    this.name = 'LockHeldError';
    this.holder = holder;
  }
}

/**
 * A model transaction whose asserts no longer hold: somebody else changed the facts it was built
 * from. Retryable: rebuild it from a fresh view (Juju's buildTxn loop).
 */
export class TxnAbortedError extends BerthError {
  constructor(rule: string, failed: string) {
    super('cas_conflict', `Cannot apply ${rule}: the model changed (${failed}); rebuild from a fresh view`, {
      rule,
      failed,
    });
    this.name = 'TxnAbortedError';
  }
}

/** A rule of seed 003 refuses the request as the model stands (e.g. a cell with units). */
export class ModelRuleError extends BerthError {
  constructor(rule: string, subject: string, reason: string) {
    super('conflict', `Cannot ${rule} ${subject}: ${reason}`, { rule, subject, reason });
    this.name = 'ModelRuleError';
  }
}

/** "A name cannot be reused until the old entity is removed" (DESIGN.md "model"). */
export class NameInUseError extends BerthError {
  constructor(kind: string, name: string, life: string) {
    super('already_exists', `Cannot create ${kind} "${name}": a ${kind} of that name is still ${life}`, {
      kind,
      name,
      life,
    });
    this.name = 'NameInUseError';
  }
}
