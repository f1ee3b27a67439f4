/**
 * The history model of seed 001 (XNAT container statuses), spelled the way berth's API spells it
 * (snake_case). A status is any string: the friendly names below, or a raw docker/swarm value the
 * mapping table leaves as it is (`die`, `destroy`, `shutdown`, …).
 */
export type ContainerStatus = string;

/** Who or what caused a status change (seed: `entity-type`). */
export type EntityType = 'system' | 'event' | 'service' | 'user';
export const entityTypes: readonly EntityType[] = ['system', 'event', 'service', 'user'];

/** What runs a container: an LRP instance, a task, a system's service, or a pod run directly. */
export type OwnerKind = 'lrp' | 'task' | 'system' | 'direct';
export const ownerKinds: readonly OwnerKind[] = ['lrp', 'task', 'system', 'direct'];

export interface HistoryItem {
  /** Unique among all history items; also their order of arrival. */
  readonly id: string;
  /** The status after the change (mapped by the seed's table, else raw). */
  readonly status: ContainerStatus;
  /** When berth recorded the change (ISO-8601, the server's clock). */
  readonly time_recorded: string;
  /** When the runtime saw the change (ISO-8601, the cell's clock), or null if not reported. */
  readonly external_timestamp: string | null;
  readonly exit_code: number | null;
  readonly entity_type: EntityType;
  /** The user's id when entity_type is `user`; otherwise usually null. */
  readonly entity_id: string | null;
  /** Why, when berth itself caused or failed something (`system`); otherwise usually null. */
  readonly message: string | null;
}

/** What was launched: known when the cell (or the API) reports the launch. */
export interface ContainerLaunch {
  readonly id: string;
  readonly image: string;
  readonly command: readonly string[];
  /** Names only: values may be secrets and are never stored. */
  readonly env_names: readonly string[];
  readonly cell_id: string;
  readonly owner_kind: OwnerKind;
  /** process_guid/index, task_guid, system/service, or the pod's uuid. */
  readonly owner_id: string;
  /** The model system the container belongs to, if any (the `system` filter). */
  readonly system: string | null;
}

export interface ContainerOutput {
  readonly name: string;
  readonly path: string;
  readonly size: number;
  /** The content when small enough to keep (text), else null. */
  readonly content: string | null;
}

export interface ContainerRecord extends ContainerLaunch {
  readonly status: ContainerStatus;
  /** time_recorded of the history item that set `status` (seed: status-time). */
  readonly status_time: string;
  readonly created_at: string;
  /** When the last history item of this container was recorded (the `since` filter). */
  readonly updated_at: string;
  readonly exit_code: number | null;
  readonly finalized_at: string | null;
  readonly outputs: readonly ContainerOutput[];
  readonly logs_size: number;
  readonly logs_truncated: boolean;
}

export interface ContainerWithHistory extends ContainerRecord {
  readonly history: readonly HistoryItem[];
}

/** A history item before it is recorded: the store assigns id and time_recorded. */
export interface NewHistoryItem {
  readonly container_id: string;
  readonly status: ContainerStatus;
  readonly external_timestamp: string | null;
  readonly exit_code: number | null;
  readonly entity_type: EntityType;
  readonly entity_id: string | null;
  readonly message: string | null;
}
