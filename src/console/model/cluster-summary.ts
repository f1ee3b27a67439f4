import type { ActualLRPState, CellCapacity, TaskState } from '../../bbs/index.js';
import type { ClusterView } from './cluster-view.js';

/** One instance as the console's tables show it. */
export interface InstanceRow {
  readonly key: string;
  readonly process_guid: string;
  readonly index: number;
  readonly system: string;
  readonly state: ActualLRPState;
  readonly cell_id: string;
  readonly crash_count: number;
  readonly placement_error: string;
  readonly crash_reason: string;
  readonly since: string;
  readonly evacuating: boolean;
  readonly instance_guid: string;
  readonly address: string;
  readonly host_ports: readonly number[];
}

/** The system of a DesiredLRP's domain (`system-shop` → `shop`), '' for a plain LRP. */
export function systemOfDomain(domain: string): string {
  return domain.startsWith('system-') ? domain.slice('system-'.length) : '';
}

export function instanceRows(view: ClusterView): InstanceRow[] {
  const rows: InstanceRow[] = [];
  for (const [key, lrp] of view.actual) {
    rows.push({
      key,
      process_guid: lrp.process_guid,
      index: lrp.index,
      system: systemOfDomain(lrp.domain),
      state: lrp.state,
      cell_id: lrp.cell_id,
      crash_count: lrp.crash_count,
      placement_error: lrp.placement_error,
      crash_reason: lrp.crash_reason,
      since: lrp.since,
      evacuating: lrp.evacuating,
      instance_guid: lrp.instance_guid,
      address: lrp.address,
      host_ports: lrp.ports.map((p) => p.host_port),
    });
  }
  return rows;
}

export interface CellUse {
  readonly cell_id: string;
  readonly zone: string;
  readonly capacity: CellCapacity;
  /** What the instances placed on the cell reserve (their DesiredLRPs' memory and disk). */
  readonly used: CellCapacity;
  readonly instances: number;
  readonly expires_at: string;
}

/**
 * Each cell's reserved share, as the auction counts it: every claimed or running instance and
 * running task on the cell reserves its definition's memory and disk and one container.
 */
export function cellUse(view: ClusterView): CellUse[] {
  const used = new Map<
    string,
    { memory_mb: number; disk_mb: number; containers: number; instances: number }
  >();
  const add = (cell: string, memory: number, disk: number, instance: boolean) => {
    const entry = used.get(cell) ?? { memory_mb: 0, disk_mb: 0, containers: 0, instances: 0 };
    entry.memory_mb += memory;
    entry.disk_mb += disk;
    entry.containers += 1;
    if (instance) entry.instances += 1;
    used.set(cell, entry);
  };
  for (const lrp of view.actual.values()) {
    if (lrp.cell_id === '' || (lrp.state !== 'CLAIMED' && lrp.state !== 'RUNNING')) continue;
    const desired = view.desired.get(lrp.process_guid);
    add(lrp.cell_id, desired?.memory_mb ?? 0, desired?.disk_mb ?? 0, true);
  }
  for (const task of view.tasks.values())
    if (task.state === 'RUNNING' && task.cell_id !== '')
      add(task.cell_id, task.memory_mb, task.disk_mb, false);
  return view.cells.map((cell) => {
    const entry = used.get(cell.cell_id);
    return {
      cell_id: cell.cell_id,
      zone: cell.zone,
      capacity: cell.capacity,
      used: {
        memory_mb: entry?.memory_mb ?? 0,
        disk_mb: entry?.disk_mb ?? 0,
        containers: entry?.containers ?? 0,
      },
      instances: entry?.instances ?? 0,
      expires_at: cell.expires_at,
    };
  });
}

export interface ClusterCounts {
  readonly instances: Readonly<Record<ActualLRPState, number>>;
  readonly tasks: Readonly<Record<TaskState, number>>;
  readonly desired_lrps: number;
  readonly cells: number;
  readonly capacity: CellCapacity;
  readonly used: CellCapacity;
}

export function clusterCounts(view: ClusterView): ClusterCounts {
  const instances: Record<ActualLRPState, number> = { UNCLAIMED: 0, CLAIMED: 0, RUNNING: 0, CRASHED: 0 };
  for (const lrp of view.actual.values()) instances[lrp.state] += 1;
  const tasks: Record<TaskState, number> = { PENDING: 0, RUNNING: 0, COMPLETED: 0, RESOLVING: 0 };
  for (const task of view.tasks.values()) tasks[task.state] += 1;
  const capacity = { memory_mb: 0, disk_mb: 0, containers: 0 };
  const used = { memory_mb: 0, disk_mb: 0, containers: 0 };
  for (const cell of cellUse(view)) {
    capacity.memory_mb += cell.capacity.memory_mb;
    capacity.disk_mb += cell.capacity.disk_mb;
    capacity.containers += cell.capacity.containers;
    used.memory_mb += cell.used.memory_mb;
    used.disk_mb += cell.used.disk_mb;
    used.containers += cell.used.containers;
  }
  return { instances, tasks, desired_lrps: view.desired.size, cells: view.cells.length, capacity, used };
}

/** Something that went wrong, newest first on the overview. */
export interface Failure {
  readonly kind: 'crash' | 'placement' | 'task';
  /** What failed: `process_guid/index` or the task's guid. */
  readonly subject: string;
  readonly reason: string;
  readonly at: string;
  readonly cell_id: string;
}

export function latestFailures(view: ClusterView, limit: number): Failure[] {
  const failures: Failure[] = [];
  for (const lrp of view.actual.values()) {
    const subject = `${lrp.process_guid}/${lrp.index}`;
    if (lrp.placement_error !== '')
      failures.push({ kind: 'placement', subject, reason: lrp.placement_error, at: lrp.since, cell_id: '' });
    if (lrp.crash_count > 0 && lrp.last_crashed_at !== null)
      failures.push({
        kind: 'crash',
        subject,
        reason: lrp.crash_reason || 'crashed',
        at: lrp.last_crashed_at,
        cell_id: lrp.cell_id,
      });
  }
  for (const task of view.tasks.values())
    if (task.failed)
      failures.push({
        kind: 'task',
        subject: task.task_guid,
        reason: task.failure_reason || 'failed',
        at: task.updated_at,
        cell_id: task.cell_id,
      });
  failures.sort((a, b) => (a.at < b.at ? 1 : a.at > b.at ? -1 : a.subject.localeCompare(b.subject)));
  return failures.slice(0, limit);
}
