import type { FastifyRequest } from 'fastify';
import type { BbsStore } from '../bbs-store.js';

/**
 * A user's public write as it touches containers, for their history (seed 001: a user's action is
 * an item with entity `user` and the user's id). The bbs layer knows which containers a write stops;
 * who the user is and where history lives are the api layer's, which records it (`onUserWrite`).
 */
export interface UserWrite {
  /** The item's status: `stop` for a container the write asks to stop. */
  readonly status: string;
  /** The containers it affects: an LRP instance's instance_guid, a task's task_guid. */
  readonly containers: readonly string[];
  /** What the user did, as history shows it. */
  readonly message: string;
}

export type OnUserWrite = (request: FastifyRequest, write: UserWrite) => Promise<void>;

/**
 * The containers of an LRP's instances from `fromIndex` up that run or are starting (they have
 * a container on a cell): what a scale down to `fromIndex` or a removal (0) stops.
 */
export async function lrpContainersFrom(
  store: BbsStore,
  processGuid: string,
  fromIndex: number,
): Promise<string[]> {
  const actuals = await store.listActualLRPs({ process_guid: processGuid });
  return actuals
    .filter(
      (a) =>
        a.index >= fromIndex && a.instance_guid !== '' && (a.state === 'CLAIMED' || a.state === 'RUNNING'),
    )
    .map((a) => a.instance_guid);
}

/**
 * Hands a committed write to the history hook. The write has happened whatever recording does, so
 * a failure to record is logged, never turned into the write's failure.
 */
export async function noteUserWrite(
  onUserWrite: OnUserWrite | undefined,
  request: FastifyRequest,
  write: UserWrite,
): Promise<void> {
  if (!onUserWrite || write.containers.length === 0) return;
  try {
    await onUserWrite(request, write);
  } catch (err) {
    // catch-all: the write is committed; its history item is what failed, and the log says so.
    request.log.warn({ err, write }, 'could not record the user action in container history');
  }
}
