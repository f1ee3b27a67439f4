import { NotFoundError } from '../core/index.js';
import { entityLocks, requestLabel, requestPaths, type StoredEntityRequest } from './entity-requests.js';
import { checkLocks, type LockRow } from './lock-table.js';
import type { ActionRow, ModelDb } from './sql-model-schema.js';
import { modelRead, modelWrite, type SqlBackend } from './sql-model-txn-runner.js';
import { defaultActionTimeoutMs } from './sql-system-store.js';

/**
 * The action rows of per-entity operations: accepted with their lock rows in one transaction of
 * the model's store (as `SqlSystemStore.acceptAction` accepts deploys), so a crash never leaves a
 * lock without its action nor an action without its locks; they end through `finishAction` like
 * every action, which releases the locks with it.
 */

export interface AcceptEntityActionRequest {
  readonly id: string;
  /** The system, or '' for a cell (a machine belongs to no system). */
  readonly system: string;
  readonly stored: StoredEntityRequest;
  readonly owner: string;
  readonly now: Date;
}

async function heldLocks(db: ModelDb, systems: readonly string[]): Promise<LockRow[]> {
  if (systems.length === 0) return [];
  const rows = await db.selectFrom('model_locks').selectAll().where('system', 'in', systems).execute();
  return rows.map((r) => ({ ...r, mode: r.mode as LockRow['mode'], action: r.action as LockRow['action'] }));
}

/**
 * The system paths an operation locks: its own service paths, or for a cell the paths of the
 * services whose units are on it (a forced destroy changes them; a plain one finds none, since
 * a cell with units is refused).
 */
async function lockedPaths(db: ModelDb, req: AcceptEntityActionRequest): Promise<Map<string, string[]>> {
  const { request } = req.stored;
  if (request.kind !== 'cell-destroy') return new Map([[req.system, requestPaths(request)]]);
  const services = await db
    .selectFrom('model_units')
    .select('service')
    .distinct()
    .where('cell_id', '=', request.cell)
    .execute();
  const out = new Map<string, string[]>();
  if (services.length === 0) return out;
  const rows = await db
    .selectFrom('model_system_services')
    .select(['system', 'path'])
    .where(
      'model_name',
      'in',
      services.map((s) => s.service),
    )
    .execute();
  for (const r of rows) out.set(r.system, [...(out.get(r.system) ?? []), r.path]);
  return out;
}

/**
 * Accepts a per-entity operation: checks its locks against every held row of the systems it
 * touches (refusing at once with `LockHeldError` naming the holder, nothing written), then writes
 * the action row (its request and user in the `definition` column) and its lock rows.
 */
export async function acceptEntityAction(
  backend: SqlBackend,
  req: AcceptEntityActionRequest,
): Promise<ActionRow> {
  return modelWrite(backend, async (db, changed) => {
    changed(req.system);
    if (req.system !== '') {
      const system = await db
        .selectFrom('model_systems')
        .select('name')
        .where('name', '=', req.system)
        .executeTakeFirst();
      if (!system) throw new NotFoundError('system', req.system);
    }
    const kind = req.stored.request.kind;
    const label = requestLabel(req.stored.request);
    const wanted: LockRow[] = [];
    for (const [system, paths] of await lockedPaths(db, req)) {
      for (const lock of entityLocks(paths))
        wanted.push({ ...lock, system, action_id: req.id, action: kind, action_path: label });
    }
    const check = checkLocks(await heldLocks(db, [...new Set(wanted.map((w) => w.system))]), wanted);
    if (!check.ok) throw check.error;
    for (const lock of wanted) changed(lock.system);
    const now = req.now.toISOString();
    const row: ActionRow = {
      id: req.id,
      system: req.system,
      kind,
      path: label,
      // The action runner moves it to in_progress when it starts executing it.
      state: 'accepted',
      reason: '',
      definition: JSON.stringify(req.stored),
      owner: req.owner,
      heartbeat_at: now,
      created_at: now,
      updated_at: now,
      finished_at: null,
      log: '[]',
      // An entity action waits for agents under its own limits (entity-executor.ts); the column
      // holds the default so every action row reads alike.
      timeout_ms: defaultActionTimeoutMs,
      principal: req.stored.user,
      rollback_of: null,
    };
    await db.insertInto('model_actions').values(row).execute();
    if (wanted.length > 0) await db.insertInto('model_locks').values(wanted).execute();
    return row;
  });
}

/** The parameters column of an action (an entity request, a teardown's `--force`), as stored. */
export async function readActionParams(backend: SqlBackend, id: string): Promise<string> {
  const row = await modelRead(backend, (db) =>
    db.selectFrom('model_actions').select('definition').where('id', '=', id).executeTakeFirst(),
  );
  if (!row) throw new NotFoundError('deploy', id);
  return row.definition;
}
