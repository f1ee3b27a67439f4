import { BerthError, httpOperation, NotFoundError } from '../core/index.js';
import { definitionDigest, secretNames } from './definition-secrets.js';
import type { ActionRow } from './sql-model-schema.js';
import { modelRead, type SqlBackend } from './sql-model-txn-runner.js';
import type { ActionRecord } from './sql-system-store.js';
import { parseStoredDefinition } from './system-service-record.js';

/**
 * One deploy or teardown of a system as `berth deploys` lists it: what was deployed (the digest
 * of its stored definition), who asked, when, and how it ended. Secrets appear by name only.
 */
export interface DeployRecord {
  readonly id: string;
  readonly kind: 'deploy' | 'teardown';
  readonly path: string;
  /** The action's state as its row says (`succeeded` and `failed` are the ends). */
  readonly state: string;
  readonly reason: string;
  /** The token's user name that asked for it ('' for actions recorded before berth kept it). */
  readonly user: string;
  /** sha256 of the canonical definition (secrets by their keyed digest); null for a teardown or an unreadable row. */
  readonly digest: string | null;
  /** The deploy whose definition this one redeploys (`berth rollback`), else null. */
  readonly rollback_of: string | null;
  readonly created_at: string;
  readonly finished_at: string | null;
  /** Secret variable names per service path: that they are set, never what they are. */
  readonly secrets: Record<string, string[]>;
}

/** The body of `POST /v1/systems/{name}/rollback`. */
export interface RollbackRequest {
  /** The deploy to go back to; default: the last succeeded deploy before the current one. */
  readonly deploy?: string;
}

/** The deploy-history API as one table: api/deploy-history-routes.ts serves it, the CLI calls it. */
export const deployHistoryOperations = {
  listDeploys: httpOperation<
    { name: string },
    { readonly limit?: number; readonly cursor?: string },
    undefined,
    { deploys: DeployRecord[]; next_cursor?: string }
  >('GET', '/v1/systems/:name/deploys'),
  rollback: httpOperation<{ name: string }, undefined, RollbackRequest, ActionRecord>(
    'POST',
    '/v1/systems/:name/rollback',
  ),
} as const;

function toRecord(row: ActionRow): DeployRecord {
  const definition = row.kind === 'deploy' ? parseStoredDefinition(row.definition) : null;
  return {
    id: row.id,
    kind: row.kind === 'teardown' ? 'teardown' : 'deploy',
    path: row.path,
    state: row.state,
    reason: row.reason,
    user: row.principal,
    digest: definition ? definitionDigest(definition) : null,
    rollback_of: row.rollback_of,
    created_at: row.created_at,
    finished_at: row.finished_at,
    secrets: definition ? secretNames(definition) : {},
  };
}

/** Every deploy and teardown of `system`, newest first; a system never deployed is not found. */
export async function listDeployHistory(backend: SqlBackend, system: string): Promise<DeployRecord[]> {
  const rows = await modelRead(backend, (db) =>
    db
      .selectFrom('model_actions')
      .selectAll()
      .where('system', '=', system)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .execute(),
  );
  if (rows.length === 0) throw new NotFoundError('system', system);
  return rows.map(toRecord);
}

/**
 * Which deploy `berth rollback` redeploys, from the history newest first. Asked for one: that
 * deploy, once it has ended and if its definition is readable. Not asked: the newest succeeded
 * deploy older than the current one (the newest deploy, whatever its outcome) whose definition
 * differs from it, so a rollback after v1, v2 goes to v1, and one after a failed v2 also to v1.
 */
export function pickRollbackTarget(history: readonly DeployRecord[], requested?: string): DeployRecord {
  const deploys = history.filter((r) => r.kind === 'deploy');
  if (requested !== undefined) {
    const target = deploys.find((r) => r.id === requested);
    if (!target) throw new NotFoundError('deploy', requested);
    if (target.state !== 'succeeded' && target.state !== 'failed')
      throw new BerthError('precondition_failed', `deploy ${requested} has not ended (${target.state})`, {
        deploy: requested,
      });
    if (target.digest === null)
      throw new BerthError('precondition_failed', `deploy ${requested} has no readable definition`, {
        deploy: requested,
      });
    return target;
  }
  const [current, ...older] = deploys;
  const target = older.find(
    (r) => r.state === 'succeeded' && r.digest !== null && r.digest !== current?.digest,
  );
  if (!current || !target)
    throw new BerthError(
      'precondition_failed',
      'Cannot roll back: no earlier succeeded deploy with another definition (name one: berth rollback SYSTEM DEPLOY)',
      { current: current?.id ?? null },
    );
  return target;
}
