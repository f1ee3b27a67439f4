import { InvalidArgumentError, NotFoundError } from '../core/index.js';
import { ModelRuleError, NameInUseError } from './model-errors.js';
import type { ModelTxn, ModelView, RelationDoc, RelationScope, UnitDoc } from './model-types.js';
import { leaveScopePart, relationRemovalPart } from './removal-parts.js';
import {
  absent,
  cleanupId,
  countEq,
  countGt,
  lifeIn,
  part,
  relationId,
  setLife,
  type TxnPart,
  txn,
} from './txn-parts.js';

/**
 * Seed 003 Services: "When a service is Alive ... the service's endpoints can be added to relations."
 * A container relation is [principal service, sidecar service]; berth gives a sidecar service one
 * principal service, so a second container relation for it is refused.
 */
export function addRelation(
  view: ModelView,
  a: string,
  b: string,
  scope: RelationScope = 'global',
): ModelTxn {
  if (a === b) throw new InvalidArgumentError(`Cannot relate service ${a} to itself`, { service: a });
  const id = relationId(a, b);
  const existing = view.relation(id);
  if (existing) throw new NameInUseError('relation', id, existing.life);
  for (const name of [a, b]) {
    const svc = view.service(name);
    if (!svc) throw new NotFoundError('service', name);
    if (svc.life !== 'alive') throw new ModelRuleError('add relation', id, `service ${name} is ${svc.life}`);
  }
  const asserts = [absent('relation', id), lifeIn('service', a, 'alive'), lifeIn('service', b, 'alive')];
  if (scope === 'container') {
    if (view.service(a)?.subordinate)
      throw new ModelRuleError('add relation', id, `${a} is a sidecar service`);
    if (!view.service(b)?.subordinate)
      throw new ModelRuleError('add relation', id, `${b} is not a sidecar service`);
    const others = [...view.relationsOfService(b)].filter((r) => view.relation(r)?.scope === 'container');
    if (others.length > 0)
      throw new ModelRuleError('add relation', id, `${b} already has principal relation ${others[0]}`);
    asserts.push(countEq('relations-of-service', b, view.count('relations-of-service', b)));
  }
  const relation: RelationDoc = { id, endpoints: [a, b], scope, life: 'alive' };
  return txn('add-relation', part(asserts, [{ op: 'insert-relation', relation }]));
}

/**
 * Seed 003 Relations: "When a relation is destroyed with no units in scope, it will be removed from
 * state immediately rather than being set to Dying"; otherwise it becomes Dying and the units in
 * scope depart. References: "destroying a container relation destroys all subordinates in the
 * relation" (a `relation-dying` cleanup, one sidecar at a time) and "destroying a global relation
 * destroys nothing else".
 */
export function destroyRelation(view: ModelView, id: string, now: Date): ModelTxn | null {
  const rel = view.relation(id);
  if (!rel) throw new NotFoundError('relation', id);
  if (rel.life !== 'alive') return null;
  const rule =
    view.count('scope-of-relation', id) === 0
      ? 'destroy-relation: remove at once'
      : 'destroy-relation: dying';
  return txn(rule, destroyRelationPart(view, rel, now));
}

/** Shared with the `service-dying` cleanup, which destroys a Dying service's relations. */
export function destroyRelationPart(view: ModelView, rel: RelationDoc, now: Date): TxnPart {
  if (view.count('scope-of-relation', rel.id) === 0) {
    const removal = relationRemovalPart(view, rel.id);
    return part([lifeIn('relation', rel.id, 'alive'), ...removal.asserts], removal.ops);
  }
  return part(
    [lifeIn('relation', rel.id, 'alive'), countGt('scope-of-relation', rel.id, 0)],
    [
      setLife('relation', rel.id, 'dying'),
      ...(rel.scope === 'container'
        ? [
            {
              op: 'insert-cleanup' as const,
              job: {
                id: cleanupId('relation-dying', rel.id),
                kind: 'relation-dying' as const,
                target: rel.id,
                due_at: now.toISOString(),
              },
            },
          ]
        : []),
    ],
  );
}

/** Whether `unit` belongs in `rel`'s scope at all: global by service, container by the pairing. */
export function unitFitsRelation(view: ModelView, rel: RelationDoc, unit: UnitDoc): boolean {
  if (rel.scope === 'global') return rel.endpoints.includes(unit.service);
  const [principalService, sidecarService] = rel.endpoints;
  if (unit.service === principalService) return unit.principal === null;
  if (unit.service !== sidecarService || unit.principal === null) return false;
  return view.unit(unit.principal)?.service === principalService;
}

/**
 * Seed 003 Relations: "While a relation is Alive, units of services in that relation can enter its
 * scope." A unit only enters while it is Alive too: a Dying unit is on its way out.
 */
export function enterScope(view: ModelView, relation: string, unit: string): ModelTxn | null {
  const rel = view.relation(relation);
  if (!rel) throw new NotFoundError('relation', relation);
  const u = view.unit(unit);
  if (!u) throw new NotFoundError('unit', unit);
  if (view.isInScope(relation, unit)) return null;
  if (!unitFitsRelation(view, rel, u))
    throw new ModelRuleError('enter scope of', relation, `unit ${unit} is not part of it`);
  if (rel.life !== 'alive') throw new ModelRuleError('enter scope of', relation, `it is ${rel.life}`);
  if (u.life !== 'alive') throw new ModelRuleError('enter scope of', relation, `unit ${unit} is ${u.life}`);
  return txn(
    'enter-scope',
    part(
      [
        lifeIn('relation', relation, 'alive'),
        lifeIn('unit', unit, 'alive'),
        { kind: 'in-scope', relation, unit, is: false },
      ],
      [{ op: 'enter-scope', relation, unit }],
    ),
  );
}

/**
 * Seed 003 Relations: the UAs "are responsible for cleanly departing the relation ... and then
 * leaving relation scope", and the last one out of a Dying relation removes it (and possibly a
 * Dying service of either side). Leaving a scope the unit is not in is a no-op (null).
 */
export function leaveScope(view: ModelView, relation: string, unit: string): ModelTxn | null {
  if (!view.isInScope(relation, unit)) return null;
  return txn('leave-scope', leaveScopePart(view, relation, unit));
}

/** Relations the (Alive) unit should be in scope of but is not: the UA's "entering relevant scopes". */
export function scopesToEnter(view: ModelView, unit: string): string[] {
  const u = view.unit(unit);
  if (u?.life !== 'alive') return [];
  const out: string[] = [];
  for (const id of view.relationsOfService(u.service)) {
    const rel = view.relation(id);
    if (rel && rel.life === 'alive' && !view.isInScope(id, unit) && unitFitsRelation(view, rel, u))
      out.push(id);
  }
  return out.sort();
}

/**
 * The units a unit sees through a relation (their addresses go into its env and relation file):
 * in global scope every unit of the other service in scope; in container scope only its pair.
 * `onlyWhenJoined = false` answers for a unit about to join (a container starting now).
 */
export function scopePeers(view: ModelView, relation: string, unit: string, onlyWhenJoined = true): string[] {
  const rel = view.relation(relation);
  const u = view.unit(unit);
  if (!rel || !u || (onlyWhenJoined && !view.isInScope(relation, unit))) return [];
  const peers: string[] = [];
  for (const other of view.unitsInScope(relation)) {
    if (other === unit) continue;
    const o = view.unit(other);
    if (!o) continue;
    if (rel.scope === 'global' ? o.service !== u.service : o.principal === unit || u.principal === other) {
      peers.push(other);
    }
  }
  return peers.sort();
}
