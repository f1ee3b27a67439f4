import type { BbsStore } from '../bbs-store.js';

export interface BbsRoutesOptions {
  readonly store: BbsStore;
  /** How often an SSE stream looks for events written by other servers (ms). */
  readonly eventPollMs?: number;
  /** In-process wake-up when this server's store committed events. */
  readonly onEvents?: (listener: () => void) => () => void;
}
