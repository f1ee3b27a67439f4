import type { OnUserWrite } from '../bbs/index.js';
import { type HistoryStore, recordUserActions } from '../history/index.js';
import { userOf } from './auth/auth-hook.js';

/**
 * The BBS routes' user writes (scale down, LRP removal, task cancel) as `user` items on the
 * containers they stop, with the caller's token user as entity_id (seed 001).
 */
export function userWriteHistory(history: HistoryStore, now: () => Date = () => new Date()): OnUserWrite {
  return async (request, write) => {
    const at = now();
    const user_id = userOf(request);
    await recordUserActions(
      history,
      write.containers.map((container_id) => ({
        container_id,
        status: write.status,
        user_id,
        message: write.message,
        at,
      })),
    );
  };
}
