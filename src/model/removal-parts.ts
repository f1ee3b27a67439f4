import type { ModelView } from './model-types.js';
import {
  anyOf,
  cleanupId,
  combine,
  countEq,
  countGt,
  lifeIn,
  part,
  removeOp,
  type TxnPart,
} from './txn-parts.js';

const none: TxnPart = part([], []);

/**
 * Seed 003 Services: "If no associated relations exist, the service is removed by the MA which
 * removes the last unit" and "the responsibility for removing the service falls to the last UA to
 * leave scope" for its last relation. Whoever drops the last reference of a Dying service removes it.
 * `leaving` is what the calling transaction drops. Either branch asserts what it decided on (Juju's
 * hasLastRef / its negation), so two racing removers cannot both skip the removal.
 */
export function serviceRemovalPart(
  view: ModelView,
  service: string,
  leaving: { readonly units: number; readonly relations: number },
): TxnPart {
  const doc = view.service(service);
  if (!doc) return none;
  const units = view.count('units-of-service', service);
  const relations = view.count('relations-of-service', service);
  if (doc.life === 'dying' && units === leaving.units && relations === leaving.relations) {
    return part(
      [
        lifeIn('service', service, 'dying'),
        countEq('units-of-service', service, leaving.units),
        countEq('relations-of-service', service, leaving.relations),
      ],
      [removeOp('service', service), { op: 'remove-cleanup', id: cleanupId('service-dying', service) }],
    );
  }
  return part(
    [
      anyOf(
        lifeIn('service', service, 'alive'),
        countGt('units-of-service', service, leaving.units),
        countGt('relations-of-service', service, leaving.relations),
      ),
    ],
    [],
  );
}

/**
 * Removes a relation that nobody is in scope of, and with it any Dying endpoint service for which
 * it was the last reference (seed 003 Relations: "relation removal may also imply service removal").
 */
export function relationRemovalPart(view: ModelView, relation: string): TxnPart {
  const doc = view.relation(relation);
  if (!doc) return none;
  const [a, b] = doc.endpoints;
  return combine(
    part(
      [countEq('scope-of-relation', relation, 0)],
      [removeOp('relation', relation), { op: 'remove-cleanup', id: cleanupId('relation-dying', relation) }],
    ),
    serviceRemovalPart(view, a, { units: 0, relations: 1 }),
    serviceRemovalPart(view, b, { units: 0, relations: 1 }),
  );
}

/**
 * Seed 003 Relations: "When the last unit leaves the scope of a Dying relation, it must remove the
 * relation from state", and possibly its service. Asserts both branches like `serviceRemovalPart`.
 */
export function leaveScopePart(view: ModelView, relation: string, unit: string): TxnPart {
  const leave = part(
    [{ kind: 'in-scope', relation, unit, is: true }],
    [{ op: 'leave-scope', relation, unit }],
  );
  const doc = view.relation(relation);
  if (doc && doc.life === 'dying' && view.count('scope-of-relation', relation) === 1) {
    const removal = relationRemovalPart(view, relation);
    return combine(
      leave,
      part([lifeIn('relation', relation, 'dying'), countEq('scope-of-relation', relation, 1)], []),
      // The removal's own "scope is 0" assert is about the state after leaving, so drop it here.
      part(
        removal.asserts.filter((a) => !(a.kind === 'count' && a.of === 'scope-of-relation')),
        removal.ops,
      ),
    );
  }
  return combine(
    leave,
    part([anyOf(lifeIn('relation', relation, 'alive'), countGt('scope-of-relation', relation, 1))], []),
  );
}

/**
 * Removes a Dead unit (seed 003 Units: "when a subordinate unit is Dead, it is removed from state by
 * its principal's UA; similarly, when a principal unit is Dead, it is removed ... by the MA"), and
 * its service when it was the Dying service's last reference.
 */
export function unitRemovalPart(view: ModelView, unit: string): TxnPart {
  const doc = view.unit(unit);
  if (!doc) return none;
  return combine(
    part(
      [
        lifeIn('unit', unit, 'dead'),
        countEq('subordinates-of-unit', unit, 0),
        countEq('scopes-of-unit', unit, 0),
      ],
      [
        removeOp('unit', unit),
        { op: 'remove-cleanup', id: cleanupId('unit-dying', unit) },
        { op: 'remove-cleanup', id: cleanupId('force-unit', unit) },
        { op: 'remove-cleanup', id: cleanupId('force-unit', unit, true) },
      ],
    ),
    serviceRemovalPart(view, doc.service, { units: 1, relations: 0 }),
  );
}
