import type { RoutesInput } from './http-routes.js';
import type { PodSidecar } from './pod-sidecars.js';
import type { TaskOutputDeclaration } from './task-output-types.js';
import type { VolumeMount } from './volume-mounts.js';
/**
 * The records of the BBS (seed 002, DESIGN.md "cluster"). These types are the contract between
 * the store, its HTTP API and every component that talks to it (rep, auctioneer, converger, model).
 * JSON on the wire uses exactly these snake_case field names.
 */

/** Every record carries one; every mutation is a compare-and-set on it. */
export interface ModificationTag {
  /** Changes when the record is deleted and created again, so an old tag can never match. */
  readonly epoch: string;
  /** Incremented on every change of the record. */
  readonly index: number;
}

/**
 * How often and how patiently the executor runs a monitor (issue 20; as Kubernetes' probe fields
 * and Diego's check definitions). Absent fields take `monitorTimingDefaults` (monitor-timing.ts),
 * so what was desired before these existed runs as before, with the defaults that ride out load.
 */
export interface MonitorTiming {
  /** How long one check (connect, request, command) may take before it counts as failed. */
  readonly timeout_ms?: number;
  /** Between checks once the instance is RUNNING (before that, checks run every 0.5 s). */
  readonly period_ms?: number;
  /** Failed checks in a row that kill a RUNNING instance. */
  readonly failure_threshold?: number;
  /** After its pod starts, failed checks do not count for this long (a slow starter). */
  readonly startup_grace_ms?: number;
}

export type Monitor = (
  | { readonly tcp: number }
  | { readonly http: { readonly port: number; readonly path: string } }
  | { readonly command: readonly string[] }
) &
  MonitorTiming;

export interface DesiredLRP {
  readonly process_guid: string;
  readonly domain: string;
  readonly instances: number;
  readonly image: string;
  /** The whole argv; absent → the image's Entrypoint + Cmd. */
  readonly command?: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly memory_mb: number;
  readonly disk_mb: number;
  /** Container ports; each instance gets a host port per container port. */
  readonly ports: readonly number[];
  /**
   * Diego's opaque map by route kind; the router reads `http`: [{hostname, port, path?}]
   * (http-routes.ts). Given as that array alone, it is stored as `{ http: [...] }`.
   */
  readonly routes: Readonly<Record<string, unknown>>;
  readonly annotation: string;
  readonly monitor?: Monitor;
  /** Seconds an instance may stay CLAIMED before its monitor passes. */
  readonly start_timeout_s: number;
  readonly placement_tags: readonly string[];
  /** Volumes of each instance (volume-mounts.ts); a named one pins the instance to its cell. Absent: none. */
  readonly volumes?: readonly VolumeMount[];
  /** More apps in each instance's pod, beside its own (pod-sidecars.ts). Absent: none. */
  readonly sidecars?: readonly PodSidecar[];
  readonly created_at: string;
  readonly modification_tag: ModificationTag;
}

/** Only these may change in place; any other change is a new DesiredLRP. */
export interface DesiredLRPUpdate {
  readonly instances?: number;
  /** The map or the plain array of HTTP routes, as on desire. */
  readonly routes?: RoutesInput;
  readonly annotation?: string;
}

export type ActualLRPState = 'UNCLAIMED' | 'CLAIMED' | 'RUNNING' | 'CRASHED';

export interface PortMapping {
  readonly container_port: number;
  readonly host_port: number;
}

export interface ActualLRPKey {
  readonly process_guid: string;
  readonly index: number;
  readonly domain: string;
}

/** Which cell claims an instance, and the container it runs in there. */
export interface ActualLRPInstanceKey {
  readonly instance_guid: string;
  readonly cell_id: string;
}

export interface ActualLRPNetInfo {
  readonly address: string;
  readonly ports: readonly PortMapping[];
}

export interface ActualLRP extends ActualLRPKey {
  readonly instance_guid: string;
  /** Empty unless CLAIMED or RUNNING. */
  readonly cell_id: string;
  readonly state: ActualLRPState;
  readonly crash_count: number;
  /** ISO-8601, or null when it never crashed. */
  readonly last_crashed_at: string | null;
  readonly crash_reason: string;
  /** ISO-8601 time of the last state change. */
  readonly since: string;
  readonly placement_error: string;
  readonly address: string;
  readonly ports: readonly PortMapping[];
  /** True for the copy stored under `/evacuating` beside the instance copy. */
  readonly evacuating: boolean;
  readonly modification_tag: ModificationTag;
}

/**
 * The memory of an LRP instance or a task that names none (`memory_mb` absent), in MB: reserved on
 * its cell and the limit of its pod, so no work runs without a memory limit unless it asks for
 * `memory_mb: 0` (no limit, nothing reserved). The same 128 MB a system's service or job gets.
 */
export const defaultWorkMemoryMb = 128;

export type TaskState = 'PENDING' | 'RUNNING' | 'COMPLETED' | 'RESOLVING';

export interface TaskDefinition {
  readonly task_guid: string;
  readonly domain: string;
  readonly image: string;
  readonly command?: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly memory_mb: number;
  readonly disk_mb: number;
  readonly result_file: string;
  readonly completion_callback_url: string;
  readonly placement_tags: readonly string[];
  /** Collected from the container when it ends (task-output-types.ts); absent: none. */
  readonly outputs?: readonly TaskOutputDeclaration[];
  /** Bytes of output content allowed (default taskOutputLimits.defaultBytes). */
  readonly outputs_max_bytes?: number;
  /** Volumes of the task's container (volume-mounts.ts); a named one is not pinned: a task runs once. */
  readonly volumes?: readonly VolumeMount[];
}

export interface Task extends TaskDefinition {
  readonly state: TaskState;
  readonly cell_id: string;
  readonly result: string;
  readonly failed: boolean;
  readonly failure_reason: string;
  readonly created_at: string;
  readonly updated_at: string;
  readonly first_completed_at: string | null;
  readonly modification_tag: ModificationTag;
}

export interface Domain {
  readonly domain: string;
  /** ISO-8601; the domain is fresh until then. */
  readonly fresh_until: string;
  /**
   * The system whose domain this is (set by its deploys): its LRPs and tasks change only through
   * that system's actions, never through the public LRP and task routes. Absent: nobody's.
   */
  readonly owner?: string;
}

export interface CellCapacity {
  readonly memory_mb: number;
  readonly disk_mb: number;
  readonly containers: number;
}

export interface CellPresence {
  readonly cell_id: string;
  readonly zone: string;
  readonly capacity: CellCapacity;
  /** Base URL of the cell's rep API (state, perform work, stop). */
  readonly rep_url: string;
  /**
   * The bearer token the cell's rep demands on every call but `/healthz` (issue 17): the cell
   * sends it with its heartbeat, the store keeps it, and the server's auctioneer and converger send
   * it back. It never leaves the server: every HTTP answer carrying presences drops it
   * (`publicCellPresence`). Absent from a cell of a berth before it, whose rep demands nothing.
   */
  readonly rep_token?: string;
  readonly placement_tags: readonly string[];
  /**
   * The cell runs the model's unit and machine agents (seed 003 "Agents") for the units on it, so
   * the server leaves those units to it. Absent means false.
   */
  readonly model_agent?: boolean;
  /** ISO-8601; the cell is considered gone after it. */
  readonly expires_at: string;
}

/** A presence as the API shows it: without the rep's token, which only the server may hold. */
export function publicCellPresence(cell: CellPresence): CellPresence {
  if (cell.rep_token === undefined) return cell;
  const { rep_token: _secret, ...visible } = cell;
  return visible;
}

/** Work the BBS asks the auctioneer to place (Diego's "start requests"). */
export interface LRPStartRequest {
  readonly process_guid: string;
  readonly domain: string;
  readonly indices: readonly number[];
  readonly memory_mb: number;
  readonly disk_mb: number;
  readonly placement_tags: readonly string[];
  /**
   * The cell holding these indices' named volumes (volume-pins): their placement tags name it too;
   * the auction says so in its placement error when that cell cannot take them. Absent: unpinned.
   */
  readonly pinned_cell?: string;
}
