import { BerthError } from '../core/index.js';
import type { LockMode, LockRow } from './lock-table.js';
import type { ModelDb } from './sql-model-schema.js';
import { assertSystemPhaseMove, type PhaseStep, type SystemPhase } from './system-status.js';

/** An action's log column: a JSON array of lines that berth wrote; anything else reads as no lines. */
export function parseActionLog(text: string): string[] {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    // catch-all: a log is for reading, never for deciding: an unreadable one must not fail its action's status.
    return [];
  }
  return Array.isArray(value) ? value.filter((line): line is string => typeof line === 'string') : [];
}

export async function heldLocks(db: ModelDb, system: string): Promise<LockRow[]> {
  const rows = await db.selectFrom('model_locks').selectAll().where('system', '=', system).execute();
  return rows.map((r) => ({
    system: r.system,
    path: r.path,
    action_id: r.action_id,
    mode: r.mode as LockMode,
    action: r.action as LockRow['action'],
    action_path: r.action_path,
  }));
}

/**
 * THE writer of a system's phase (issue 19: the phase table is the one code path): every insert,
 * update and delete of `model_systems` is here, and every move is asserted against
 * `systemPhaseTransitions` first. Staying in a phase is no move (a reason changes: an active
 * system's degraded condition, a failed teardown's reason). Moving to `gone` deletes the system's
 * rows; moving from `gone` creates it. `sql-system-phase.test.ts` fails if another writer appears.
 */
export async function writeSystemPhase(
  db: ModelDb,
  system: string,
  from: SystemPhase,
  step: PhaseStep,
  nowIso: string,
): Promise<void> {
  if (from !== step.to) {
    try {
      assertSystemPhaseMove(from, step.to, system);
    } catch (err) {
      if (from === 'deleting' && step.to === 'pending')
        throw new BerthError(
          'illegal_transition',
          `Cannot deploy system "${system}": it is being deleted (a system leaves deleting only by going); run \`berth teardown ${system}\` again`,
          { system, from, to: step.to },
        );
      throw err;
    }
  }
  if (from === 'gone' && step.to === 'gone') return;
  if (from === 'gone') {
    await db
      .insertInto('model_systems')
      .values({ name: system, phase: step.to, reason: step.reason, created_at: nowIso, updated_at: nowIso })
      .execute();
    return;
  }
  if (step.to === 'gone') {
    await db.deleteFrom('model_system_services').where('system', '=', system).execute();
    await db.deleteFrom('model_systems').where('name', '=', system).execute();
    return;
  }
  await db
    .updateTable('model_systems')
    .set({ phase: step.to, reason: step.reason, updated_at: nowIso })
    .where('name', '=', system)
    .where('phase', '=', from)
    .execute();
}
