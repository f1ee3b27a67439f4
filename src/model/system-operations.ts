import { httpOperation, type PageQuery, type QueryOf } from '../core/index.js';
import type { ActionProgress } from './rollout-observe.js';
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
    { readonly path?: string; readonly timeout_ms?: string },
    { definition: string | Record<string, unknown>; path?: string; timeout_ms?: number },
    ActionRecord
  >('POST', '/v1/deploys'),
  getAction: httpOperation<
    { id: string },
    undefined,
    undefined,
    ActionRecord & { progress?: ActionProgress }
  >('GET', '/v1/deploys/:id'),
  teardown: httpOperation<
    { name: string },
    { readonly timeout_ms?: string; readonly force?: 'true' | 'false' },
    undefined,
    ActionRecord
  >('POST', '/v1/systems/:name/teardown'),
  listSystems: httpOperation<
    undefined,
    QueryOf<typeof PageQuery>,
    undefined,
    { systems: SystemSummary[]; next_cursor?: string }
  >('GET', '/v1/systems'),
  getSystem: httpOperation<{ name: string }, undefined, undefined, SystemStatusJson>(
    'GET',
    '/v1/systems/:name',
  ),
} as const;
