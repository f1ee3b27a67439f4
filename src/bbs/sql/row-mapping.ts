import { randomUUID } from 'node:crypto';
import type { RowQuery } from '../../db/index.js';
import type { ConvergenceActualLRP } from '../bbs-store-log.js';
import type {
  ActualLRP,
  ActualLRPState,
  CellPresence,
  DesiredLRP,
  PortMapping,
  Task,
  TaskState,
} from '../bbs-types.js';
import type { ActualLrpRow, DesiredLrpRow, TaskRow } from './bbs-database.js';
import { actualColumns } from './hot-statements.js';

/**
 * Records ↔ rows for every table of the store: keyed rows from the query builder, positional rows
 * (arrays) from the full reads, which build each of up to 250,000 objects once, in one literal.
 */

// ------------------------------------------------------------------ full reads (positional rows)

const desiredColumns =
  'process_guid, domain, instances, definition, routes, annotation, created_at, tag_epoch, tag_index';

export async function readAllDesired(query: RowQuery): Promise<DesiredLRP[]> {
  return query(`SELECT ${desiredColumns} FROM desired_lrps ORDER BY process_guid`, [], (r) =>
    rowToDesired({
      process_guid: r[0] as string,
      domain: r[1] as string,
      instances: Number(r[2]),
      definition: r[3] as string,
      routes: r[4] as string,
      annotation: r[5] as string,
      created_at: r[6] as string,
      tag_epoch: r[7] as string,
      tag_index: Number(r[8]),
    }),
  );
}

export async function readAllActual(query: RowQuery): Promise<ActualLRP[]> {
  return query(
    `SELECT ${actualColumns} FROM actual_lrps ORDER BY process_guid, idx, evacuating`,
    [],
    arrayToActual,
  );
}

/** The converger's projection's columns, of `actual_lrps a` (its read joins tables). */
export const convergenceActualColumns =
  'a.process_guid, a.idx, a.evacuating, a.domain, a.instance_guid, a.cell_id, a.state, a.crash_count, a.last_crashed_at, a.since, a.tag_epoch, a.tag_index';

/**
 * The converger's projection (`convergenceActualColumns`). Its own object literal rather than
 * `arrayToActual` minus fields: the hot read builds each of up to 250,000 objects once, in one
 * hidden class.
 */
export function arrayToConvergenceActual(r: unknown[]): ConvergenceActualLRP {
  return {
    process_guid: r[0] as string,
    index: r[1] as number,
    domain: r[3] as string,
    instance_guid: r[4] as string,
    cell_id: r[5] as string,
    state: r[6] as ActualLRPState,
    crash_count: r[7] as number,
    last_crashed_at: r[8] as string | null,
    since: r[9] as string,
    evacuating: r[2] === 1,
    modification_tag: { epoch: r[10] as string, index: r[11] as number },
  };
}

/** Column order of `actualColumns`; one object literal so every ActualLRP shares a hidden class. */
export function arrayToActual(r: unknown[]): ActualLRP {
  const ports = r[13] as string;
  return {
    process_guid: r[0] as string,
    index: r[1] as number,
    domain: r[3] as string,
    instance_guid: r[4] as string,
    cell_id: r[5] as string,
    state: r[6] as ActualLRPState,
    crash_count: r[7] as number,
    last_crashed_at: r[8] as string | null,
    crash_reason: r[9] as string,
    since: r[10] as string,
    placement_error: r[11] as string,
    address: r[12] as string,
    ports: ports === '[]' ? [] : (JSON.parse(ports) as PortMapping[]),
    evacuating: r[2] === 1,
    modification_tag: { epoch: r[14] as string, index: r[15] as number },
  };
}

export function arrayToCell(r: unknown[]): CellPresence {
  return {
    cell_id: r[0] as string,
    zone: r[1] as string,
    capacity: JSON.parse(r[2] as string) as CellPresence['capacity'],
    rep_url: r[3] as string,
    placement_tags: JSON.parse(r[4] as string) as string[],
    expires_at: r[5] as string,
    ...(r[6] ? { rep_token: r[6] as string } : {}),
  };
}

// ------------------------------------------------------------------ row mapping

export function desiredToRow(d: DesiredLRP): DesiredLrpRow {
  const { process_guid, domain, instances, routes, annotation, created_at, modification_tag, ...definition } =
    d;
  return {
    process_guid,
    domain,
    instances,
    definition: JSON.stringify(definition),
    routes: JSON.stringify(routes),
    annotation,
    created_at,
    tag_epoch: modification_tag.epoch,
    tag_index: modification_tag.index,
  };
}

export function rowToDesired(r: DesiredLrpRow): DesiredLRP {
  const definition = JSON.parse(r.definition) as Omit<
    DesiredLRP,
    'process_guid' | 'domain' | 'instances' | 'routes' | 'annotation' | 'created_at' | 'modification_tag'
  >;
  return {
    process_guid: r.process_guid,
    domain: r.domain,
    instances: r.instances,
    ...definition,
    routes: JSON.parse(r.routes) as Record<string, unknown>,
    annotation: r.annotation,
    created_at: r.created_at,
    modification_tag: { epoch: r.tag_epoch, index: Number(r.tag_index) },
  };
}

export function actualToRow(a: ActualLRP): ActualLrpRow {
  return {
    process_guid: a.process_guid,
    idx: a.index,
    evacuating: a.evacuating ? 1 : 0,
    domain: a.domain,
    instance_guid: a.instance_guid,
    cell_id: a.cell_id,
    state: a.state,
    crash_count: a.crash_count,
    last_crashed_at: a.last_crashed_at,
    crash_reason: a.crash_reason,
    since: a.since,
    placement_error: a.placement_error,
    address: a.address,
    ports: a.ports.length === 0 ? '[]' : JSON.stringify(a.ports),
    tag_epoch: a.modification_tag.epoch,
    tag_index: a.modification_tag.index,
  };
}

/** The hot path of the convergence read (250,000 rows): no work beyond building the object. */
export function rowToActual(r: ActualLrpRow): ActualLRP {
  return {
    process_guid: r.process_guid,
    index: r.idx,
    domain: r.domain,
    instance_guid: r.instance_guid,
    cell_id: r.cell_id,
    state: r.state as ActualLRPState,
    crash_count: r.crash_count,
    last_crashed_at: r.last_crashed_at,
    crash_reason: r.crash_reason,
    since: r.since,
    placement_error: r.placement_error,
    address: r.address,
    ports: r.ports === '[]' ? [] : (JSON.parse(r.ports) as PortMapping[]),
    evacuating: r.evacuating === 1,
    modification_tag: { epoch: r.tag_epoch, index: r.tag_index },
  };
}

export function taskToRow(t: Task): TaskRow {
  const {
    task_guid,
    domain,
    state,
    cell_id,
    result,
    failed,
    failure_reason,
    created_at,
    updated_at,
    first_completed_at,
    modification_tag,
    ...definition
  } = t;
  return {
    task_guid,
    domain,
    state,
    cell_id,
    definition: JSON.stringify(definition),
    result,
    failed: failed ? 1 : 0,
    failure_reason,
    created_at,
    updated_at,
    first_completed_at,
    tag_epoch: modification_tag.epoch,
    tag_index: modification_tag.index,
  };
}

export function rowToTask(r: TaskRow): Task {
  const definition = JSON.parse(r.definition) as Omit<Task, 'task_guid' | 'domain'>;
  return {
    task_guid: r.task_guid,
    domain: r.domain,
    ...definition,
    state: r.state as TaskState,
    cell_id: r.cell_id,
    result: r.result,
    failed: r.failed === 1,
    failure_reason: r.failure_reason,
    created_at: r.created_at,
    updated_at: r.updated_at,
    first_completed_at: r.first_completed_at,
    modification_tag: { epoch: r.tag_epoch, index: Number(r.tag_index) },
  };
}

// ------------------------------------------------------------------ small helpers

export function newUnclaimed(processGuid: string, index: number, domain: string, now: string): ActualLRP {
  return {
    process_guid: processGuid,
    index,
    domain,
    instance_guid: '',
    cell_id: '',
    state: 'UNCLAIMED',
    crash_count: 0,
    last_crashed_at: null,
    crash_reason: '',
    since: now,
    placement_error: '',
    address: '',
    ports: [],
    evacuating: false,
    modification_tag: { epoch: randomUUID(), index: 0 },
  };
}
