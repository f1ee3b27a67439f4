import { IllegalTransitionError } from '../core/index.js';

/**
 * Seed 003 "Lifecycles": every machine (berth: cell), unit, service and relation has one of these
 * lives, and "no such thing can ever change to an earlier state".
 */
export type Life = 'alive' | 'dying' | 'dead';

/** A life or the absence that follows it; `removed` is the end of the road for one incarnation. */
export type LifeStep = Life | 'removed';

export const lives: readonly Life[] = ['alive', 'dying', 'dead'];
export const lifeSteps: readonly LifeStep[] = ['alive', 'dying', 'dead', 'removed'];

/** The four kinds of seed 003 ("there are only 4"), named as DESIGN.md maps them onto berth. */
export type EntityKind = 'cell' | 'unit' | 'service' | 'relation';

export const entityKinds: readonly EntityKind[] = ['cell', 'unit', 'service', 'relation'];

/**
 * The forward-only table per kind. Cells and units walk every step. Services and relations are
 * "never Dead" (seed: Services, Relations), and may skip Dying entirely: "if no associated units or
 * relations exist when a service is destroyed, the service is removed from state immediately", and
 * the same for "a relation destroyed with no units in scope".
 */
export const lifeTransitions: Readonly<Record<EntityKind, Readonly<Record<LifeStep, readonly LifeStep[]>>>> =
  {
    cell: { alive: ['dying'], dying: ['dead'], dead: ['removed'], removed: [] },
    unit: { alive: ['dying'], dying: ['dead'], dead: ['removed'], removed: [] },
    service: { alive: ['dying', 'removed'], dying: ['removed'], dead: [], removed: [] },
    relation: { alive: ['dying', 'removed'], dying: ['removed'], dead: [], removed: [] },
  };

export function canMoveLife(kind: EntityKind, from: LifeStep, to: LifeStep): boolean {
  return lifeTransitions[kind][from].includes(to);
}

/** Throws the typed error of an illegal move: never a silent no-op (DESIGN.md "model"). */
export function assertLifeMove(kind: EntityKind, from: LifeStep, to: LifeStep, subject?: string): void {
  if (!canMoveLife(kind, from, to)) throw new IllegalTransitionError(`${kind} life`, from, to, subject);
}

/** Order of the steps, so "never goes back" is a comparison. */
export function lifeRank(step: LifeStep): number {
  return lifeSteps.indexOf(step);
}

/** The lives an entity of this kind can have at all (services and relations are never Dead). */
export function livesOf(kind: EntityKind): readonly Life[] {
  return kind === 'service' || kind === 'relation' ? ['alive', 'dying'] : lives;
}
