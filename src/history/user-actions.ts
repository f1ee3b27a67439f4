import type { HistoryStore } from './history-store.js';
import type { IngestResult } from './ingest-records.js';

export interface UserAction {
  readonly container_id: string;
  /** What the action makes of the container: `Killed`, `Created`, or a verb such as `stop`. */
  readonly status: string;
  /** The acting user's id (their token's user name). */
  readonly user_id: string;
  readonly message?: string;
  /** When the user acted; it is also what keeps two identical actions apart. */
  readonly at: Date;
}

/**
 * Records a user's action (launch, kill, scale, deploy) on a container with entity_type `user`
 * and the user's id, as the seed records XNAT users' actions.
 */
export function recordUserAction(history: HistoryStore, action: UserAction): Promise<IngestResult> {
  return recordUserActions(history, [action]);
}

/** Several containers' user actions (one scale stops several instances) in one ingest. */
export function recordUserActions(
  history: HistoryStore,
  actions: readonly UserAction[],
): Promise<IngestResult> {
  return history.ingest(
    actions.map((action) => ({
      type: 'item' as const,
      container_id: action.container_id,
      status: action.status,
      entity_type: 'user' as const,
      entity_id: action.user_id,
      message: action.message ?? null,
      external_timestamp: action.at.toISOString(),
    })),
  );
}
