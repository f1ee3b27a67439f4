import type { BbsStore } from '../bbs/index.js';
import { type HistoryStore, type IngestResult, recordUserActions } from '../history/index.js';
import { systemDomain } from '../model/index.js';

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
