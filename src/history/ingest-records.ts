import type { ContainerLaunch, ContainerOutput, EntityType } from './history-types.js';

/**
 * What cells and the API hand the history store, journaled on the cell and delivered in batches
 * (`POST /v1/containers/events`). Every record is idempotent: delivering a batch twice changes
 * nothing the second time.
 */
export type IngestRecord = LaunchRecord | EventRecord | ItemRecord | FinalizationRecord;

/** A container was launched: what it runs, where, for whom. Recorded as a `Created` item too. */
export interface LaunchRecord {
  readonly type: 'launch';
  readonly container: ContainerLaunch;
  /** When it was launched (the launcher's clock). */
  readonly external_timestamp: string;
  /** `user` with entity_id for `berth run`/API launches; `system` when berth launched it. */
  readonly entity_type?: 'system' | 'user';
  readonly entity_id?: string | null;
  /**
   * The BBS domain of the LRP or task it runs: the server fills `container.system` from the system
   * that owns the domain when the cell, which does not know systems, leaves it null.
   */
  readonly domain?: string;
}

/** A raw runtime observation in docker's vocabulary, mapped by the seed's table when recorded. */
export interface EventRecord {
  readonly type: 'event';
  readonly container_id: string;
  readonly event: string;
  readonly external_timestamp: string | null;
  readonly exit_code?: number | null;
  readonly message?: string | null;
  /** `event` when pushed by the runtime/executor, `service` when seen only by polling. */
  readonly entity_type: 'event' | 'service';
}

/** An already-named status change: berth's own (`system`) or a user's action (`user`). */
export interface ItemRecord {
  readonly type: 'item';
  readonly container_id: string;
  readonly status: string;
  readonly entity_type: EntityType;
  readonly entity_id?: string | null;
  readonly message?: string | null;
  readonly external_timestamp?: string | null;
  readonly exit_code?: number | null;
}

/** The end of a container: its logs (capped), outputs, exit code, and whether finalizing failed. */
export interface FinalizationRecord {
  readonly type: 'finalization';
  readonly container_id: string;
  readonly exit_code: number | null;
  readonly logs: string;
  /** Bytes of log the container wrote; more than `logs` holds when truncated. */
  readonly logs_size: number;
  readonly logs_truncated: boolean;
  readonly outputs: readonly ContainerOutput[];
  /** Why finalization itself failed (logs or outputs unreadable), or null. */
  readonly error: string | null;
  /** Why the container failed when its exit code cannot say (it never ran: no image); `Failed`. */
  readonly failure?: string | null;
  /** It ended because it was asked to stop (by whom): a non-zero exit is then `Killed`, not `Failed`. */
  readonly stopped?: string | null;
}

export interface IngestResult {
  /** History items newly recorded. */
  readonly recorded: number;
  /** Items already recorded before (same status, message and external_timestamp). */
  readonly duplicates: number;
}
