import type { FastifyRequest } from 'fastify';
import type { BbsStore } from '../bbs-store.js';
import type { TaskDeliveryLog } from '../task-callback-log.js';
import type { OnUserWrite } from './user-writes.js';

export interface BbsRoutesOptions {
  readonly store: BbsStore;
  /** How often an SSE stream looks for events written by other servers (ms). */
  readonly eventPollMs?: number;
  /** In-process wake-up when this server's store committed events. */
  readonly onEvents?: (listener: () => void) => () => void;
  /** The newest event's id ('' when none), for `GET /v1/events?after=now`. */
  readonly headEventId?: () => Promise<string>;
  /** Completion-callback delivery log shown on `GET /v1/tasks/{guid}`; default: the SQL store's own. */
  readonly taskDeliveries?: TaskDeliveryLog;
  /**
   * A task's completion_callback_url may name a loopback, link-local or unspecified address;
   * otherwise it is a 400 at creation (src/core/callback-target.ts).
   */
  readonly allowPrivateCallbacks?: boolean;
  /**
   * Whether this caller sees env values redacted (viewers, docs/auth.md). Routes answering with
   * `reply.send` are redacted by the app's preSerialization hook; the SSE stream, which writes
   * its own bytes, asks here.
   */
  readonly redactsEnv?: (request: FastifyRequest) => boolean;
  /**
   * Whether the caller's token is still valid; the event stream asks every `reauthMs` and ends
   * when it is not (a revoked or expired token stops receiving events). Absent: never asked.
   */
  readonly stillAuthorized?: (request: FastifyRequest) => Promise<boolean>;
  /** How often an open event stream checks its caller's token again (ms, default 5,000). */
  readonly reauthMs?: number;
  /**
   * Records a user's public write (scale, remove, cancel) on the containers it stops, as a `user`
   * history item; the api layer, which knows the caller and has history, supplies it.
   */
  readonly onUserWrite?: OnUserWrite;
}
