import { InvalidArgumentError, NotFoundError } from '../core/index.js';
import { destroyCell } from './cell-rules.js';
import type { EntityRequest } from './entity-requests.js';
import { unitName } from './instance-names.js';
import { ModelRuleError } from './model-errors.js';
import type { ModelView } from './model-types.js';
import { addRelation } from './relation-rules.js';
import { destroyService } from './service-rules.js';
import { isSidecarRecord, type ServiceRecord, type SystemServiceRecord } from './system-service-record.js';
import { relationId } from './txn-parts.js';
import { destroyUnit, forceDestroyUnit } from './unit-rules.js';

/**
 * What `--force` does in the agents' place, said before it is done (seed 003 "Implementation
 * issues": a forced unit "leave[s] several relation scopes", removes relations and services as the
 * last one out, "*and* ... all the same things happen for all the unit's subordinates", then is
 * Dead without its agent). The history and the action's log carry this sentence.
 */
export function forcedUnitSkips(view: ModelView, unit: string): string {
  const u = view.unit(unit);
  if (!u) return `unit ${unit} is already gone`;
  const scopes = [...view.scopesOfUnit(unit)].sort();
  const sidecars = [...view.subordinatesOf(unit)].sort();
  const skipped: string[] = [];
  if (scopes.length > 0)
    skipped.push(
      `departing ${scopes.length} relation scope(s) (${scopes.map((r) => r.replace(' ', ' <-> ')).join(', ')})`,
    );
  if (sidecars.length > 0) skipped.push(`destroying its sidecar unit(s) ${sidecars.join(', ')}`);
  if (u.life !== 'dead') skipped.push('setting it Dead');
  const agent = u.cell_id === null ? 'its unit agent (never placed)' : `its unit agent on cell ${u.cell_id}`;
  return skipped.length === 0
    ? `did not wait for ${agent}: nothing left for it to do`
    : `did not wait for ${agent}: the server did its part (${skipped.join('; ')})`;
}

/** The same for a cell: its units forced as above, and its machine agent's Dying → Dead not awaited. */
export function forcedCellSkips(view: ModelView, cell: string): string {
  const units = [...view.unitsOnCell(cell)].filter((u) => view.unit(u)?.principal === null).sort();
  const forced = units.length > 0 ? `forced ${units.length} unit(s) off it (${units.join(', ')}); ` : '';
  return `${forced}did not wait for the machine agent of cell ${cell}: the server set it Dead and removed it`;
}

/** Why an action still waits for an agent, for its failure reason when the wait times out. */
export function waitingOn(view: ModelView, unit: string): string {
  const u = view.unit(unit);
  if (!u) return 'nothing';
  const where = u.cell_id === null ? 'no cell' : `cell ${u.cell_id}`;
  const scopes = view.count('scopes-of-unit', unit);
  const sidecars = view.count('subordinates-of-unit', unit);
  const parts = [`unit ${unit} is ${u.life} on ${where}`];
  if (scopes > 0) parts.push(`still in ${scopes} relation scope(s)`);
  if (sidecars > 0) parts.push(`${sidecars} sidecar unit(s) left`);
  return parts.join(', ');
}

/**
 * Refuses at once, with the rule's typed error, a request the model as it stands does not allow,
 * before anything is written (the action re-applies the same rules when it runs, so a change in
 * between fails the action with the rule's reason instead). `rows` are the system's deployed rows.
 */
export function precheckEntityRequest(
  view: ModelView,
  rows: readonly SystemServiceRecord[],
  request: EntityRequest,
  now: Date,
): void {
  const service = (path: string): ServiceRecord => {
    const row = rows.find((r) => r.path === path);
    if (!row) throw new NotFoundError('service', path);
    if (row.kind !== 'service')
      throw new InvalidArgumentError(`Cannot ${request.kind} ${path}: it is a job, not a service`, { path });
    return row;
  };
  switch (request.kind) {
    case 'unit-destroy': {
      const unit = unitName(service(request.path).model_name, request.index);
      if (!view.unit(unit)) throw new NotFoundError('unit', `${request.path}/${request.index}`);
      if (request.force) forceDestroyUnit(view, unit, now);
      else destroyUnit(view, unit, now);
      return;
    }
    case 'service-scale': {
      const row = service(request.path);
      if (isSidecarRecord(row))
        throw new ModelRuleError(
          'scale',
          `service ${request.path}`,
          'it is a sidecar: it has one unit per principal unit',
        );
      if (view.service(row.model_name)?.life !== 'alive')
        throw new ModelRuleError(
          'scale',
          `service ${request.path}`,
          `it is ${view.service(row.model_name)?.life ?? 'gone'}`,
        );
      return;
    }
    case 'service-destroy':
      destroyService(view, service(request.path).model_name, now);
      return;
    case 'relation-add':
      addRelation(view, service(request.a).model_name, service(request.b).model_name, 'global');
      return;
    case 'relation-remove': {
      const id = relationId(service(request.a).model_name, service(request.b).model_name);
      const rel = view.relation(id);
      if (!rel) throw new NotFoundError('relation', `${request.a} <-> ${request.b}`);
      if (rel.scope === 'container')
        throw new ModelRuleError(
          'remove',
          `relation ${request.a} <-> ${request.b}`,
          'it pairs a sidecar with its principal: destroy the sidecar service instead',
        );
      return;
    }
    case 'cell-destroy':
      // Seed 003 Machines: refused "when units are assigned"; --force forces them off first.
      if (!request.force) destroyCell(view, request.cell);
      else if (!view.cell(request.cell)) throw new NotFoundError('cell', request.cell);
      return;
  }
}
