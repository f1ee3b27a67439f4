import { httpOperation } from '../core/index.js';
import type { ActionRecord } from './sql-system-store.js';

type SystemParams = { name: string };
type Force = { force?: boolean };

/**
 * Seed 003's per-entity commands as one table: api/entity-routes.ts registers each at `op.path`
 * and the CLI (`berth unit destroy`, `service scale`, …) calls the same operations. Each answers
 * 202 with the accepted action (follow it at `GET /v1/deploys/{id}`).
 */
export const entityOperations = {
  destroyUnit: httpOperation<SystemParams, undefined, { path: string; index: number } & Force, ActionRecord>(
    'POST',
    '/v1/systems/:name/units/destroy',
  ),
  scaleService: httpOperation<SystemParams, undefined, { path: string; instances: number }, ActionRecord>(
    'POST',
    '/v1/systems/:name/services/scale',
  ),
  destroyService: httpOperation<SystemParams, undefined, { path: string } & Force, ActionRecord>(
    'POST',
    '/v1/systems/:name/services/destroy',
  ),
  addRelation: httpOperation<SystemParams, undefined, { a: string; b: string }, ActionRecord>(
    'POST',
    '/v1/systems/:name/relations/add',
  ),
  removeRelation: httpOperation<SystemParams, undefined, { a: string; b: string }, ActionRecord>(
    'POST',
    '/v1/systems/:name/relations/remove',
  ),
  destroyCell: httpOperation<{ id: string }, undefined, Force, ActionRecord>(
    'POST',
    '/v1/model/cells/:id/destroy',
  ),
} as const;
