import type { Static } from '@sinclair/typebox';
import { httpOperation, type PageQuery, type QueryOf } from '../../core/index.js';
import type { VolumePin } from '../bbs-store.js';
import type { ActualLRP, CellPresence, DesiredLRP, Domain, Task } from '../bbs-types.js';
import type { TaskDelivery } from '../task-callback-log.js';
import type {
  DesiredLRPDefinitionSchema,
  DesiredLRPUpdateSchema,
  TaskDefinitionSchema,
} from './bbs-schemas.js';
import type { ActualLrpListQuery, DesiredLrpListQuery, TaskListQuery } from './list-query-schemas.js';

/** A page of a list route: the records under their key, and where the next page starts. */
export type RecordPage<Key extends string, T> = { readonly [k in Key]: T[] } & {
  readonly next_cursor?: string;
};

export type TaskWithDeliveries = Task & { readonly deliveries: readonly TaskDelivery[] };

/**
 * The BBS's public routes as one table (the internal ones are bbs-operations.ts): bbs-routes.ts
 * registers each at `op.path`, and the CLI calls them through HttpJsonClient.call, typed by the
 * same request schemas the routes validate with.
 */
export const bbsPublicOperations = {
  desireLrp: httpOperation<undefined, undefined, Static<typeof DesiredLRPDefinitionSchema>, DesiredLRP>(
    'POST',
    '/v1/desired_lrps',
  ),
  listDesiredLrps: httpOperation<
    undefined,
    QueryOf<typeof DesiredLrpListQuery>,
    undefined,
    RecordPage<'desired_lrps', DesiredLRP>
  >('GET', '/v1/desired_lrps'),
  getDesiredLrp: httpOperation<{ process_guid: string }, undefined, undefined, DesiredLRP>(
    'GET',
    '/v1/desired_lrps/:process_guid',
  ),
  updateDesiredLrp: httpOperation<
    { process_guid: string },
    undefined,
    Static<typeof DesiredLRPUpdateSchema>,
    DesiredLRP
  >('PATCH', '/v1/desired_lrps/:process_guid'),
  removeDesiredLrp: httpOperation<{ process_guid: string }>('DELETE', '/v1/desired_lrps/:process_guid'),
  listActualLrps: httpOperation<
    undefined,
    QueryOf<typeof ActualLrpListQuery>,
    undefined,
    RecordPage<'actual_lrps', ActualLRP>
  >('GET', '/v1/actual_lrps'),
  listTasks: httpOperation<undefined, QueryOf<typeof TaskListQuery>, undefined, RecordPage<'tasks', Task>>(
    'GET',
    '/v1/tasks',
  ),
  desireTask: httpOperation<undefined, undefined, Static<typeof TaskDefinitionSchema>, Task>(
    'POST',
    '/v1/tasks',
  ),
  getTask: httpOperation<{ task_guid: string }, undefined, undefined, TaskWithDeliveries>(
    'GET',
    '/v1/tasks/:task_guid',
  ),
  taskDeliveries: httpOperation<{ task_guid: string }, undefined, undefined, { deliveries: TaskDelivery[] }>(
    'GET',
    '/v1/tasks/:task_guid/deliveries',
  ),
  resolveTask: httpOperation<{ task_guid: string }, undefined, undefined, Task>(
    'POST',
    '/v1/tasks/:task_guid/resolve',
  ),
  deleteTask: httpOperation<{ task_guid: string }>('DELETE', '/v1/tasks/:task_guid'),
  cancelTask: httpOperation<{ task_guid: string }, undefined, undefined, Task>(
    'POST',
    '/v1/tasks/:task_guid/cancel',
  ),
  listCells: httpOperation<
    undefined,
    QueryOf<typeof PageQuery>,
    undefined,
    RecordPage<'cells', CellPresence>
  >('GET', '/v1/cells'),
  /** Registered by the api layer (api/cell-routes.ts): the server forwards it to the cell's rep. */
  evacuateCell: httpOperation<
    { cell_id: string },
    undefined,
    undefined,
    { cell_id: string; evacuating: boolean }
  >('POST', '/v1/cells/:cell_id/evacuate'),
  listDomains: httpOperation<undefined, QueryOf<typeof PageQuery>, undefined, RecordPage<'domains', Domain>>(
    'GET',
    '/v1/domains',
  ),
  upsertDomain: httpOperation<{ domain: string }, undefined, { ttl_ms: number }, Domain>(
    'PUT',
    '/v1/domains/:domain',
  ),
  listVolumePins: httpOperation<
    undefined,
    { domain?: string; cell_id?: string },
    undefined,
    { volume_pins: VolumePin[] }
  >('GET', '/v1/volume_pins'),
  releaseVolumePins: httpOperation<
    { domain: string },
    { volume?: string; index?: string },
    undefined,
    { released: number }
  >('DELETE', '/v1/volume_pins/:domain'),
} as const;
