import { NotFoundError } from '../core/index.js';
import { ModelRuleError, NameInUseError } from './model-errors.js';
import type { ModelTxn, ModelView, Op, UnitDoc } from './model-types.js';
import { unitRemovalPart } from './removal-parts.js';
import {
  absent,
  cleanupId,
  combine,
  countEq,
  lifeIn,
  part,
  setLife,
  type TxnPart,
  txn,
  unitName,
} from './txn-parts.js';

/** DESIGN.md: `--force` schedules a backstop cleanup at now + max-wait, default one minute. */
export const defaultForceMaxWaitMs = 60_000;

function mustUnit(view: ModelView, name: string): UnitDoc {
  const unit = view.unit(name);
  if (!unit) throw new NotFoundError('unit', name);
  return unit;
}

/**
 * Seed 003 Services: "When a service is Alive, units may be added to it." The unit is instance
 * `index` of the service; its name cannot be reused until the old unit is removed. Sidecar services
 * get units only through their principals (`addSidecarUnit`).
 */
export function addUnit(view: ModelView, service: string, index: number): ModelTxn {
  const svc = view.service(service);
  if (!svc) throw new NotFoundError('service', service);
  const name = unitName(service, index);
  const existing = view.unit(name);
  if (existing) throw new NameInUseError('unit', name, existing.life);
  if (svc.life !== 'alive')
    throw new ModelRuleError('add unit to', `service ${service}`, `it is ${svc.life}`);
  if (svc.subordinate) {
    throw new ModelRuleError(
      'add unit to',
      `service ${service}`,
      'it is a sidecar service: its units follow principals',
    );
  }
  const unit: UnitDoc = { name, service, index, life: 'alive', cell_id: null, principal: null };
  return txn(
    'add-unit',
    part([lifeIn('service', service, 'alive'), absent('unit', name)], [{ op: 'insert-unit', unit }]),
  );
}

/**
 * The unit's move to Dying. Seed 003 Units: "When a principal unit becomes Dying, all its
 * subordinates must also become Dying": the `unit-dying` cleanup written beside it does that one
 * sidecar at a time; it is only written when an Alive sidecar exists (an assert on that count, and
 * none can be added once the principal is Dying).
 */
export function unitDyingPart(view: ModelView, unit: string, now: Date): TxnPart {
  const aliveSubs = view.count('alive-subordinates-of-unit', unit);
  const ops: Op[] = [setLife('unit', unit, 'dying')];
  if (aliveSubs > 0) {
    ops.push({
      op: 'insert-cleanup',
      job: { id: cleanupId('unit-dying', unit), kind: 'unit-dying', target: unit, due_at: now.toISOString() },
    });
  }
  return part([lifeIn('unit', unit, 'alive'), countEq('alive-subordinates-of-unit', unit, aliveSubs)], ops);
}

/**
 * Seed 003 Units: "A unit can become Dying at any time", via `destroy-unit`. References: "destroying
 * a subordinate directly is impossible": a sidecar goes with its principal or its relation.
 * Destroying a unit that is already Dying or Dead is a no-op (null).
 */
export function destroyUnit(view: ModelView, unit: string, now: Date): ModelTxn | null {
  const u = mustUnit(view, unit);
  if (u.principal !== null) {
    throw new ModelRuleError(
      'destroy',
      `unit ${unit}`,
      `it is a sidecar of ${u.principal}; destroy the principal`,
    );
  }
  if (u.life !== 'alive') return null;
  return txn('destroy-unit', unitDyingPart(view, unit, now));
}

/**
 * Seed 003 Units / Agents: the UA is responsible for "detecting its service's Dying state, and setting
 * its own Dying state". The `service-dying` cleanup does the same in batches; whichever commits
 * first wins and the other's asserts fail, so they can race safely.
 */
export function unitDyingForService(view: ModelView, unit: string, now: Date): ModelTxn | null {
  const u = mustUnit(view, unit);
  if (u.life !== 'alive' || view.service(u.service)?.life !== 'dying') return null;
  return txn(
    'unit-agent: service is dying',
    combine(part([lifeIn('service', u.service, 'dying')], []), unitDyingPart(view, unit, now)),
  );
}

/**
 * Seed 003 Units: a unit "may not become Dead while any unit subordinate to it exists, or when the
 * unit is in scope for any relation"; the UA sets it Dead once it has departed and removed them.
 */
export function ensureUnitDead(view: ModelView, unit: string): ModelTxn | null {
  const u = mustUnit(view, unit);
  if (u.life === 'dead') return null;
  if (u.life === 'alive')
    throw new ModelRuleError('set Dead', `unit ${unit}`, 'it is Alive; destroy it first');
  const subs = view.count('subordinates-of-unit', unit);
  if (subs > 0)
    throw new ModelRuleError('set Dead', `unit ${unit}`, `${subs} subordinate unit(s) still exist`);
  const scopes = view.count('scopes-of-unit', unit);
  if (scopes > 0)
    throw new ModelRuleError('set Dead', `unit ${unit}`, `it is in scope of ${scopes} relation(s)`);
  return txn(
    'unit-dead',
    part(
      [
        lifeIn('unit', unit, 'dying'),
        countEq('subordinates-of-unit', unit, 0),
        countEq('scopes-of-unit', unit, 0),
      ],
      [setLife('unit', unit, 'dead')],
    ),
  );
}

/**
 * Seed 003 Units: a Dead subordinate is removed by its principal's UA, a Dead principal by the MA of
 * its cell; Services: the remover of the last unit removes a Dying service with no relations.
 */
export function removeUnit(view: ModelView, unit: string): ModelTxn {
  const u = mustUnit(view, unit);
  if (u.life !== 'dead') throw new ModelRuleError('remove', `unit ${unit}`, `it is ${u.life}, not Dead`);
  return txn('remove-unit', unitRemovalPart(view, unit));
}

/**
 * Seed 003 "Implementation issues": forcible destruction, for a unit whose agent cannot do its part.
 * The unit goes Dying now, and a `force-unit` cleanup leaves its scopes (removing relations and
 * services as the last one out), forces its sidecars through the same, sets it Dead and removes it,
 * one entity per transaction. A second job, due at now + max-wait, is the backstop that finishes
 * whatever the first run could not (DESIGN.md: errors are collected, not fatal).
 */
export function forceDestroyUnit(
  view: ModelView,
  unit: string,
  now: Date,
  maxWaitMs: number = defaultForceMaxWaitMs,
): ModelTxn {
  const u = mustUnit(view, unit);
  if (u.principal !== null) {
    throw new ModelRuleError(
      'destroy',
      `unit ${unit}`,
      `it is a sidecar of ${u.principal}; destroy the principal`,
    );
  }
  const jobs: Op[] = [
    {
      op: 'insert-cleanup',
      job: { id: cleanupId('force-unit', unit), kind: 'force-unit', target: unit, due_at: now.toISOString() },
    },
    {
      op: 'insert-cleanup',
      job: {
        id: cleanupId('force-unit', unit, true),
        kind: 'force-unit',
        target: unit,
        due_at: new Date(now.getTime() + maxWaitMs).toISOString(),
      },
    },
  ];
  if (u.life === 'alive') {
    return txn(
      'force-destroy-unit',
      part([lifeIn('unit', unit, 'alive')], [setLife('unit', unit, 'dying'), ...jobs]),
    );
  }
  return txn('force-destroy-unit', part([lifeIn('unit', unit, 'dying', 'dead')], jobs));
}
