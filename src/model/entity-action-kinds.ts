/** The per-entity operations of seed 003 that run as actions (`entity-requests.ts` has their shapes). */
export const entityActionKinds = [
  'unit-destroy',
  'service-scale',
  'service-destroy',
  'relation-add',
  'relation-remove',
  'cell-destroy',
] as const;

export type EntityActionKind = (typeof entityActionKinds)[number];

export function isEntityActionKind(kind: string): kind is EntityActionKind {
  return (entityActionKinds as readonly string[]).includes(kind);
}

/** Every kind of action that holds intention locks: seed 004's two and the per-entity ones. */
export type LockingActionKind = 'deploy' | 'teardown' | EntityActionKind;
