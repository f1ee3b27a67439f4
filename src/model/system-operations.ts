import { httpOperation } from '../core/index.js';
import type { ActionRecord } from './sql-system-store.js';
import type { SystemStatusJson } from './system-status-view.js';

/** A system as `GET /v1/systems` lists it. */
export interface SystemSummary {
  readonly name: string;
  readonly state: string;
  readonly reason?: string;
}

/**
 * The systems API as one table: api/system-routes.ts registers each route at `op.path`, and the
 * CLI (`deploy`, `teardown`, `system …`, `berth up`) calls the same operations.
 */
export const systemOperations = {
  deploy: httpOperation<
    undefined,
    { readonly path?: string },
    { definition: string | Record<string, unknown>; path?: string },
    ActionRecord
  >('POST', '/v1/deploys'),
  getAction: httpOperation<{ id: string }, undefined, undefined, ActionRecord>('GET', '/v1/deploys/:id'),
  teardown: httpOperation<{ name: string }, { readonly force?: 'true' | 'false' }, undefined, ActionRecord>(
    'POST',
    '/v1/systems/:name/teardown',
  ),
  listSystems: httpOperation<
    undefined,
    { readonly limit?: number; readonly cursor?: string },
    undefined,
    { systems: SystemSummary[]; next_cursor?: string }
  >('GET', '/v1/systems'),
  getSystem: httpOperation<{ name: string }, undefined, undefined, SystemStatusJson>(
    'GET',
    '/v1/systems/:name',
  ),
} as const;
