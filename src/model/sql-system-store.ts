import type { Selectable } from 'kysely';
import { sql } from 'kysely';
import { BerthError, NotFoundError } from '../core/index.js';
import { type ActionState, actionStateOf, assertActionMove, liveActionStateTexts } from './action-states.js';
import type { LockingActionKind } from './entity-action-kinds.js';
import { checkLocks, type LifecycleAction, type LockRow, lockRowsFor } from './lock-table.js';
import type { ActionRow, SystemRow } from './sql-model-schema.js';
import { modelRead, modelWrite, type SqlBackend } from './sql-model-txn-runner.js';
import { heldLocks, parseActionLog, writeSystemPhase } from './sql-system-rows.js';
import type { SystemDefinition } from './system-definition.js';
import {
  parseServiceRow,
  parseStoredDefinition,
  type SystemServiceRecord,
  serviceRowOf,
} from './system-service-record.js';
import { phaseOnAccept, phaseOnFinish } from './system-status.js';

/** Seed 004's deploy and teardown, and the per-entity operations of seed 003 (`entity-requests.ts`). */
export type ActionKind = LockingActionKind;
export type { ActionState } from './action-states.js';

/** A deploy's timeout when none is given (issue 19: `--timeout`, default 10 min). */
export const defaultActionTimeoutMs = 600_000;

/** A deploy or teardown as the API shows it. */
export interface ActionRecord {
  readonly id: string;
  readonly system: string;
  readonly kind: ActionKind;
  readonly path: string;
  readonly state: ActionState;
  readonly reason: string;
  readonly owner: string;
  readonly created_at: string;
  readonly updated_at: string;
  readonly finished_at: string | null;
  readonly log: readonly string[];
  /** How long it may last from `created_at` (its acceptance) before it fails, across restarts. */
  readonly timeout_ms: number;
}

/** A live action with what its executor needs. */
export interface ActionWork extends ActionRecord {
  readonly definition: SystemDefinition | null;
}

export interface SystemRecord {
  readonly name: string;
  /** pending | failed | active | deleting (seed 004's diagram; `active` is the computed box). */
  readonly phase: 'pending' | 'failed' | 'active' | 'deleting';
  readonly reason: string;
  readonly created_at: string;
  readonly updated_at: string;
}

export interface AcceptActionRequest {
  readonly id: string;
  readonly system: string;
  readonly action: LifecycleAction;
  readonly definition?: SystemDefinition;
  /** An action's own parameters when it has no definition (a teardown's `--force`, who asked). */
  readonly params?: unknown;
  readonly owner: string;
  /** Default `defaultActionTimeoutMs`. */
  readonly timeout_ms?: number;
  /** Who asked (the token's user name); recorded for `berth deploys`. */
  readonly user?: string;
  /** For a rollback: the deploy whose stored definition this one redeploys. */
  readonly rollback_of?: string;
}

function toAction(row: Selectable<ActionRow>): ActionRecord {
  return {
    id: row.id,
    system: row.system,
    kind: row.kind as ActionKind,
    path: row.path,
    state: actionStateOf(row.state),
    reason: row.reason,
    owner: row.owner,
    created_at: row.created_at,
    updated_at: row.updated_at,
    finished_at: row.finished_at,
    log: parseActionLog(row.log),
    // PostgreSQL returns a BIGINT as text.
    timeout_ms: Number(row.timeout_ms),
  };
}

function toWork(row: Selectable<ActionRow>): ActionWork {
  return {
    ...toAction(row),
    definition: row.definition === '' ? null : parseStoredDefinition(row.definition),
  };
}

function toSystem(row: SystemRow): SystemRecord {
  return { ...row, phase: row.phase as SystemRecord['phase'] };
}

/**
 * Systems, their deployed services, lifecycle actions and the intention-lock rows, in the BBS
 * database. Every write runs under the model's write lock (`modelWrite`), so "check the held locks,
 * then write mine" is one atomic step across every server on the database (seed 004: all or
 * nothing, at once, nothing queues).
 */
export class SqlSystemStore {
  readonly backend: SqlBackend;
  readonly #now: () => Date;

  constructor(backend: SqlBackend, now: () => Date = () => new Date()) {
    this.backend = backend;
    this.#now = now;
  }

  /**
   * Accepts a deploy or teardown: in ONE transaction, checks its locks against every held row of
   * the system, then writes the action row, its lock rows and the system's new phase. A conflict
   * throws `LockHeldError` naming the holder, and nothing is written.
   */
  async acceptAction(req: AcceptActionRequest): Promise<ActionRecord> {
    return modelWrite(this.backend, async (db, changed) => {
      changed(req.system);
      const now = this.#now().toISOString();
      const wanted = lockRowsFor(req.system, req.id, req.action);
      const check = checkLocks(await heldLocks(db, req.system), wanted);
      if (!check.ok) throw check.error;
      const system = await db
        .selectFrom('model_systems')
        .selectAll()
        .where('name', '=', req.system)
        .executeTakeFirst();
      if (!system && req.action.kind === 'teardown') throw new NotFoundError('system', req.system);
      const from = system ? toSystem(system).phase : 'gone';
      await writeSystemPhase(db, req.system, from, phaseOnAccept(req.action.kind, from), now);
      const row: ActionRow = {
        id: req.id,
        system: req.system,
        kind: req.action.kind,
        path: req.action.kind === 'teardown' ? '/' : req.action.path,
        state: 'accepted',
        reason: '',
        definition: req.definition
          ? JSON.stringify(req.definition)
          : req.params !== undefined
            ? JSON.stringify(req.params)
            : '',
        owner: req.owner,
        heartbeat_at: now,
        created_at: now,
        updated_at: now,
        finished_at: null,
        log: '[]',
        timeout_ms: req.timeout_ms ?? defaultActionTimeoutMs,
        principal: req.user ?? '',
        rollback_of: req.rollback_of ?? null,
      };
      await db.insertInto('model_actions').values(row).execute();
      await db.insertInto('model_locks').values(wanted).execute();
      return toAction(row);
    });
  }

  /** Moves an accepted action to in_progress as its owner starts executing it (a resumed one may be either). */
  async startAction(id: string, owner: string): Promise<boolean> {
    return modelWrite(this.backend, async (db, changed) => {
      const action = await db
        .selectFrom('model_actions')
        .select(['state', 'system'])
        .where('id', '=', id)
        .where('owner', '=', owner)
        .executeTakeFirst();
      if (!action) return false;
      const from = actionStateOf(action.state);
      if (from === 'in_progress') return true;
      assertActionMove(from, 'in_progress', id);
      changed(action.system);
      await db
        .updateTable('model_actions')
        .set({ state: 'in_progress', updated_at: this.#now().toISOString() })
        .where('id', '=', id)
        .where('state', '=', action.state)
        .execute();
      return true;
    });
  }

  /**
   * Ends an action: its final state, its lock rows released and the system's phase (by
   * `phaseOnFinish`, through `writeSystemPhase`), in one transaction. Only the current owner may
   * finish it (a server that lost it to a takeover must not); returns false when it was not the owner.
   */
  async finishAction(
    id: string,
    owner: string,
    state: 'succeeded' | 'failed',
    reason: string,
  ): Promise<boolean> {
    return modelWrite(this.backend, async (db, changed) => {
      const now = this.#now().toISOString();
      const action = await db
        .selectFrom('model_actions')
        .selectAll()
        .where('id', '=', id)
        .where('owner', '=', owner)
        .where('state', 'in', liveActionStateTexts)
        .executeTakeFirst();
      if (!action) return false;
      assertActionMove(actionStateOf(action.state), state, id);
      changed(action.system);
      await db
        .updateTable('model_actions')
        .set({ state, reason, updated_at: now, finished_at: now })
        .where('id', '=', id)
        .execute();
      await db.deleteFrom('model_locks').where('action_id', '=', id).execute();
      // A per-entity operation changes a part of the system, never its phase.
      const kind = action.kind;
      if (kind !== 'deploy' && kind !== 'teardown') return true;
      const system = await db
        .selectFrom('model_systems')
        .selectAll()
        .where('name', '=', action.system)
        .executeTakeFirst();
      if (!system) return true;
      const from = toSystem(system).phase;
      await writeSystemPhase(
        db,
        action.system,
        from,
        phaseOnFinish(kind, state, from, reason, system.reason),
        now,
      );
      return true;
    });
  }

  async appendLog(id: string, owner: string, line: string): Promise<void> {
    await modelWrite(this.backend, async (db, changed) => {
      const row = await db
        .selectFrom('model_actions')
        .select(['log', 'system'])
        .where('id', '=', id)
        .where('owner', '=', owner)
        .executeTakeFirst();
      if (!row) return;
      changed(row.system);
      const log = [...parseActionLog(row.log), `${this.#now().toISOString()} ${line}`].slice(-200);
      await db
        .updateTable('model_actions')
        .set({ log: JSON.stringify(log), updated_at: this.#now().toISOString() })
        .where('id', '=', id)
        .execute();
    });
  }

  /** Marks this owner's running actions alive. */
  async heartbeat(owner: string): Promise<void> {
    await modelWrite(this.backend, async (db) => {
      await db
        .updateTable('model_actions')
        .set({ heartbeat_at: this.#now().toISOString() })
        .where('owner', '=', owner)
        .where('state', 'in', liveActionStateTexts)
        .execute();
    });
  }

  /**
   * Takes over running actions whose owner died: its heartbeat is older than `ttlMs`, or
   * `ownerDead` says so (a server on this host whose process is gone). The takeover is a
   * compare-and-set on the old owner, so two servers never both take one action; the locks stay
   * held throughout (they belong to the action, not the server).
   */
  async claimOrphans(
    owner: string,
    ttlMs: number,
    ownerDead: (owner: string) => boolean,
  ): Promise<ActionWork[]> {
    return modelWrite(this.backend, async (db) => {
      const now = this.#now();
      const stale = new Date(now.getTime() - ttlMs).toISOString();
      const rows = await db
        .selectFrom('model_actions')
        .selectAll()
        .where('state', 'in', liveActionStateTexts)
        .where('owner', '!=', owner)
        .orderBy('created_at')
        .execute();
      const claimed: ActionWork[] = [];
      for (const row of rows) {
        if (!(row.heartbeat_at < stale || ownerDead(row.owner))) continue;
        const result = await db
          .updateTable('model_actions')
          .set({ owner, heartbeat_at: now.toISOString(), updated_at: now.toISOString() })
          .where('id', '=', row.id)
          .where('owner', '=', row.owner)
          .where('state', 'in', liveActionStateTexts)
          .executeTakeFirst();
        if (result.numUpdatedRows === 1n) claimed.push(toWork({ ...row, owner }));
      }
      return claimed;
    });
  }

  async getAction(id: string): Promise<ActionRecord> {
    const row = await modelRead(this.backend, (db) =>
      db.selectFrom('model_actions').selectAll().where('id', '=', id).executeTakeFirst(),
    );
    if (!row) throw new NotFoundError('deploy', id);
    return toAction(row);
  }

  async getWork(id: string): Promise<ActionWork> {
    const row = await modelRead(this.backend, (db) =>
      db.selectFrom('model_actions').selectAll().where('id', '=', id).executeTakeFirst(),
    );
    if (!row) throw new NotFoundError('deploy', id);
    return toWork(row);
  }

  async listSystems(): Promise<SystemRecord[]> {
    const rows = await modelRead(this.backend, (db) =>
      db.selectFrom('model_systems').selectAll().orderBy('name').execute(),
    );
    return rows.map(toSystem);
  }

  async getSystem(name: string): Promise<SystemRecord | undefined> {
    const row = await modelRead(this.backend, (db) =>
      db.selectFrom('model_systems').selectAll().where('name', '=', name).executeTakeFirst(),
    );
    return row ? toSystem(row) : undefined;
  }

  async listServices(system: string): Promise<SystemServiceRecord[]> {
    const rows = await modelRead(this.backend, (db) =>
      db
        .selectFrom('model_system_services')
        .selectAll()
        .where('system', '=', system)
        .orderBy('path')
        .execute(),
    );
    return rows.map(parseServiceRow);
  }

  async putService(row: SystemServiceRecord): Promise<void> {
    await modelWrite(this.backend, async (db, changed) => {
      changed(row.system);
      const values = serviceRowOf(row);
      await db
        .insertInto('model_system_services')
        .values(values)
        .onConflict((oc) =>
          oc.columns(['system', 'path']).doUpdateSet({
            kind: values.kind,
            model_name: values.model_name,
            version: values.version,
            spec: values.spec,
            process_guid: values.process_guid,
            old_process_guid: values.old_process_guid,
            // A job's outcome belongs to its version: a new version has none yet.
            outcome: sql<string>`CASE WHEN model_system_services.version = ${values.version} THEN model_system_services.outcome ELSE '' END`,
          }),
        )
        .execute();
    });
  }

  /** Records how a job's version ended (`completed` or `failed: reason`), unless its row moved on to another version. */
  async recordJobOutcome(system: string, path: string, version: string, outcome: string): Promise<void> {
    await modelWrite(this.backend, async (db, changed) => {
      changed(system);
      await db
        .updateTable('model_system_services')
        .set({ outcome })
        .where('system', '=', system)
        .where('path', '=', path)
        .where('version', '=', version)
        .where('kind', '=', 'job')
        .execute();
    });
  }

  /** The recorded outcome of each job of a system that has one, by path. */
  async jobOutcomes(system: string): Promise<Map<string, string>> {
    const rows = await modelRead(this.backend, (db) =>
      db
        .selectFrom('model_system_services')
        .select(['path', 'outcome'])
        .where('system', '=', system)
        .where('kind', '=', 'job')
        .where('outcome', '!=', '')
        .execute(),
    );
    return new Map(rows.map((r) => [r.path, r.outcome]));
  }

  async deleteService(system: string, path: string): Promise<void> {
    await modelWrite(this.backend, async (db, changed) => {
      changed(system);
      await db
        .deleteFrom('model_system_services')
        .where('system', '=', system)
        .where('path', '=', path)
        .execute();
    });
  }

  async locks(system: string): Promise<LockRow[]> {
    return modelRead(this.backend, (db) => heldLocks(db, system));
  }

  /** Actions still running for a system (the status shows them). */
  async runningActions(system: string): Promise<ActionRecord[]> {
    const rows = await modelRead(this.backend, (db) =>
      db
        .selectFrom('model_actions')
        .selectAll()
        .where('system', '=', system)
        .where('state', 'in', liveActionStateTexts)
        .orderBy('created_at')
        .execute(),
    );
    return rows.map(toAction);
  }
}

/** An action refused before anything was written, for reasons other than locks. */
export function refused(message: string, details: Record<string, unknown>): BerthError {
  return new BerthError('invalid_argument', message, details);
}
