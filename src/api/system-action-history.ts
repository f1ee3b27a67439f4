import type { FastifyRequest } from 'fastify';
import type { BbsStore } from '../bbs/index.js';
import { type HistoryStore, type IngestResult, recordUserActions } from '../history/index.js';
import { type ActionRecord, systemDomain } from '../model/index.js';
import { userOf } from './auth/auth-hook.js';

export interface SystemUserAction {
  readonly system: string;
  /** The token's user name (`userOf(request)`). */
  readonly user_id: string;
  /** The item's status: `update` for a deploy (docker's word), `stop` for a teardown. */
  readonly status: string;
  readonly message: string;
  readonly at: Date;
}

/**
 * A user's action on a whole system (deploy, teardown, seed 001 via issue 19 item 6): a `user`
 * item on every container the system runs or is starting now — its LRP instances on cells and its
 * running job tasks. For the system routes to call once the action is accepted.
 */
export async function recordSystemUserAction(
  history: HistoryStore,
  store: BbsStore,
  action: SystemUserAction,
): Promise<IngestResult> {
  const domain = systemDomain(action.system);
  const actuals = await store.listActualLRPs({ domain });
  const tasks = await store.listTasks({ domain, state: 'RUNNING' });
  const containers = [
    ...actuals
      .filter((a) => a.instance_guid !== '' && (a.state === 'CLAIMED' || a.state === 'RUNNING'))
      .map((a) => a.instance_guid),
    ...tasks.map((t) => t.task_guid),
  ];
  return recordUserActions(
    history,
    containers.map((container_id) => ({
      container_id,
      status: action.status,
      user_id: action.user_id,
      message: action.message,
      at: action.at,
    })),
  );
}

/** Called by the system routes once an action is accepted (deploy, rollback, teardown). */
export type OnSystemAction = (request: FastifyRequest, action: ActionRecord) => Promise<void>;

/**
 * The system routes' hook: the accepted action as the caller's `user` item on the system's
 * containers (`update` for a deploy or rollback, `stop` for a teardown). The action is accepted
 * whatever happens here, so a failure to record it is logged, not answered.
 */
export function systemActionHistory(
  history: HistoryStore,
  store: BbsStore,
  now: () => Date = () => new Date(),
): OnSystemAction {
  return async (request, action) => {
    const what = action.kind === 'teardown' ? 'teardown' : `deploy of ${action.path}`;
    try {
      await recordSystemUserAction(history, store, {
        system: action.system,
        user_id: userOf(request),
        status: action.kind === 'teardown' ? 'stop' : 'update',
        message: `${what} accepted as action ${action.id}`,
        at: now(),
      });
    } catch (err) {
      // catch-all: the action is accepted and runs; only its history item is missing, and the log says so.
      request.log.warn({ err, action: action.id }, 'could not record the system action in container history');
    }
  };
}
