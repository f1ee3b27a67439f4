import { NotFoundError } from '../core/index.js';
import { ModelRuleError, NameInUseError } from './model-errors.js';
import type { ModelTxn, ModelView, RelationDoc, UnitDoc } from './model-types.js';
import { absent, anyOf, combine, lifeIn, part, relationId, txn, unitName } from './txn-parts.js';
import { unitDyingPart } from './unit-rules.js';

/** The container relation that makes `sidecarService` a sidecar of its principal service, if any. */
export function principalRelationOf(view: ModelView, sidecarService: string): RelationDoc | undefined {
  for (const id of view.relationsOfService(sidecarService)) {
    const rel = view.relation(id);
    if (rel && rel.scope === 'container' && rel.endpoints[1] === sidecarService) return rel;
  }
  return undefined;
}

/**
 * Seed 003 Units: "While a principal unit is alive, it ... can have subordinate units added"; Agents:
 * "a principal UA is responsible for creating and deploying its Alive subordinates". One sidecar unit
 * per principal unit and sidecar service, on the principal's cell, with the principal's index, so
 * "one per principal" is the name's uniqueness (and a Dying old sidecar blocks a new one until removed).
 */
export function addSidecarUnit(view: ModelView, principal: string, sidecarService: string): ModelTxn {
  const p = view.unit(principal);
  if (!p) throw new NotFoundError('unit', principal);
  const svc = view.service(sidecarService);
  if (!svc) throw new NotFoundError('service', sidecarService);
  const relId = relationId(p.service, sidecarService);
  const rel = view.relation(relId);
  const subject = `sidecar of ${principal} in ${sidecarService}`;
  if (!svc.subordinate)
    throw new ModelRuleError('add', subject, `${sidecarService} is not a sidecar service`);
  if (rel?.scope !== 'container' || rel.endpoints[0] !== p.service) {
    throw new ModelRuleError(
      'add',
      subject,
      `no container relation between ${p.service} and ${sidecarService}`,
    );
  }
  if (p.principal !== null) throw new ModelRuleError('add', subject, `${principal} is itself a sidecar`);
  if (p.life !== 'alive') throw new ModelRuleError('add', subject, `principal ${principal} is ${p.life}`);
  if (svc.life !== 'alive') throw new ModelRuleError('add', subject, `${sidecarService} is ${svc.life}`);
  if (rel.life !== 'alive') throw new ModelRuleError('add', subject, `relation ${relId} is ${rel.life}`);
  if (p.cell_id === null) throw new ModelRuleError('add', subject, `principal ${principal} has no cell yet`);
  const name = unitName(sidecarService, p.index);
  const existing = view.unit(name);
  if (existing) throw new NameInUseError('unit', name, existing.life);
  const unit: UnitDoc = {
    name,
    service: sidecarService,
    index: p.index,
    life: 'alive',
    cell_id: p.cell_id,
    principal,
  };
  return txn(
    'add-sidecar-unit',
    part(
      [
        lifeIn('unit', principal, 'alive'),
        { kind: 'unit-cell', unit: principal, cell_id: p.cell_id },
        lifeIn('service', sidecarService, 'alive'),
        lifeIn('relation', relId, 'alive'),
        absent('unit', name),
      ],
      [{ op: 'insert-unit', unit }],
    ),
  );
}

export interface SidecarToCreate {
  readonly principal: string;
  readonly service: string;
}

/** Every (Alive, placed principal unit, Alive sidecar service) pair that has no sidecar unit yet. */
export function sidecarsToCreate(view: ModelView): SidecarToCreate[] {
  const out: SidecarToCreate[] = [];
  for (const rel of view.relations()) {
    if (rel.scope !== 'container' || rel.life !== 'alive') continue;
    const [principalService, sidecarService] = rel.endpoints;
    if (view.service(sidecarService)?.life !== 'alive') continue;
    for (const name of view.unitsOfService(principalService, 'alive')) {
      const p = view.unit(name);
      if (!p || p.cell_id === null || p.principal !== null) continue;
      if (!view.unit(unitName(sidecarService, p.index)))
        out.push({ principal: name, service: sidecarService });
    }
  }
  return out.sort((a, b) => (a.principal < b.principal ? -1 : a.principal > b.principal ? 1 : 0));
}

/** Why an Alive sidecar must go, or null when it may stay. */
function sidecarEndReason(view: ModelView, unit: UnitDoc): string | null {
  if (unit.principal === null) return null;
  const p = view.unit(unit.principal);
  if (p?.life !== 'alive') return `principal ${unit.principal} is ${p?.life ?? 'gone'}`;
  const rel = view.relation(relationId(p.service, unit.service));
  if (rel?.life !== 'alive')
    return `container relation ${relationId(p.service, unit.service)} is ${rel?.life ?? 'gone'}`;
  return null;
}

/**
 * Alive sidecar units whose principal is no longer Alive or whose container relation is going
 * (References: "destroying a principal destroys all its subordinates", "destroying a container
 * relation destroys all subordinates in the relation").
 */
export function sidecarsToDestroy(view: ModelView, sidecarService: string): string[] {
  const out: string[] = [];
  for (const name of view.unitsOfService(sidecarService, 'alive')) {
    const u = view.unit(name);
    if (u && sidecarEndReason(view, u) !== null) out.push(name);
  }
  return out.sort();
}

/**
 * A sidecar goes Dying only through its principal or its relation, and the transaction asserts which
 * (a principal past Alive, or the relation Dying or gone): the cascade rule for cleanups and agents.
 */
export function destroySidecarUnit(view: ModelView, unit: string, now: Date): ModelTxn | null {
  const u = view.unit(unit);
  if (!u) throw new NotFoundError('unit', unit);
  if (u.life !== 'alive' || u.principal === null) return null;
  const reason = sidecarEndReason(view, u);
  if (reason === null)
    throw new ModelRuleError('destroy', `sidecar ${unit}`, 'its principal and relation are Alive');
  const p = view.unit(u.principal);
  const relId = relationId(p?.service ?? '', u.service);
  return txn(
    'sidecar-dying',
    combine(
      part(
        [
          anyOf(
            lifeIn('unit', u.principal, 'dying', 'dead'),
            absent('unit', u.principal),
            lifeIn('relation', relId, 'dying'),
            absent('relation', relId),
          ),
        ],
        [],
      ),
      unitDyingPart(view, unit, now),
    ),
  );
}
