import { NotFoundError } from '../core/index.js';
import { NameInUseError } from './model-errors.js';
import type { ModelTxn, ModelView } from './model-types.js';
import {
  absent,
  anyOf,
  cleanupId,
  countEq,
  countGt,
  lifeIn,
  part,
  removeOp,
  setLife,
  txn,
} from './txn-parts.js';

/**
 * Seed 003: "All such things start existence Alive." A name still held by a Dying service is
 * refused: it cannot be reused until the old service is removed.
 */
export function addService(
  view: ModelView,
  name: string,
  options: { readonly subordinate?: boolean } = {},
): ModelTxn {
  const existing = view.service(name);
  if (existing) throw new NameInUseError('service', name, existing.life);
  return txn(
    'add-service',
    part(
      [absent('service', name)],
      [{ op: 'insert-service', service: { name, life: 'alive', subordinate: options.subordinate ?? false } }],
    ),
  );
}

/**
 * Seed 003 Services: "A service can become dying at any time ... This causes all the units to become
 * Dying ... and will also cause all relations in which the service is participating to become
 * Dying", but "if no associated units or relations exist when a service is destroyed, the service is
 * removed from state immediately rather than being set to Dying."
 *
 * The cascade is not in this transaction: the `service-dying` cleanup job written beside it walks
 * the relations one at a time and the units in bounded batches (seed: "we can't ... do a bulk update
 * of 100k units"). Destroying a Dying service again is a no-op (null).
 */
export function destroyService(view: ModelView, name: string, now: Date): ModelTxn | null {
  const svc = view.service(name);
  if (!svc) throw new NotFoundError('service', name);
  if (svc.life !== 'alive') return null;
  const units = view.count('units-of-service', name);
  const relations = view.count('relations-of-service', name);
  if (units === 0 && relations === 0) {
    return txn(
      'destroy-service: remove at once',
      part(
        [
          lifeIn('service', name, 'alive'),
          countEq('units-of-service', name, 0),
          countEq('relations-of-service', name, 0),
        ],
        [removeOp('service', name)],
      ),
    );
  }
  return txn(
    'destroy-service: dying',
    part(
      [
        lifeIn('service', name, 'alive'),
        anyOf(countGt('units-of-service', name, 0), countGt('relations-of-service', name, 0)),
      ],
      [
        setLife('service', name, 'dying'),
        {
          op: 'insert-cleanup',
          job: {
            id: cleanupId('service-dying', name),
            kind: 'service-dying',
            target: name,
            due_at: now.toISOString(),
          },
        },
      ],
    ),
  );
}
