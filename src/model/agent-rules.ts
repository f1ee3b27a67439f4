import { ensureCellDead, removeCell } from './cell-rules.js';
import type { ModelTxn, ModelView } from './model-types.js';
import { enterScope, leaveScope, scopesToEnter } from './relation-rules.js';
import { addSidecarUnit, destroySidecarUnit, principalRelationOf } from './sidecar-rules.js';
import { first, unitName } from './txn-parts.js';
import { ensureUnitDead, removeUnit, unitDyingForService } from './unit-rules.js';

/** What an agent (berth's rep, for its cell and its units) should do next. */
export type AgentStep =
  | { readonly kind: 'txn'; readonly txn: ModelTxn }
  | { readonly kind: 'wait'; readonly reason: string }
  | { readonly kind: 'idle' };

const idle: AgentStep = { kind: 'idle' };

function step(t: ModelTxn | null): AgentStep | null {
  return t ? { kind: 'txn', txn: t } : null;
}

/**
 * Seed 003 Agents, the unit agent, one step at a time:
 *  - "detecting its service's Dying state, and setting its own Dying state";
 *  - "detecting its own Dying state, and: leaving relation scopes, possibly removing those relations,
 *    possibly removing some of those relations' services, waiting for its subordinates' Dead states
 *    and removing the subordinates, possibly removing their services, finally setting its own Dead
 *    state";
 *  - and the "easy side": a principal UA creates its Alive sidecars, every UA enters its scopes.
 */
export function unitAgentStep(view: ModelView, unit: string, now: Date): AgentStep {
  const u = view.unit(unit);
  if (!u) return idle;
  if (u.life === 'alive') {
    const dying = step(unitDyingForService(view, unit, now));
    if (dying) return dying;
    // Seed 003 Relations: "When a relation becomes Dying, the UAs of units that have entered its
    // scope are responsible for cleanly departing the relation".
    for (const id of view.scopesOfUnit(unit)) {
      if (view.relation(id)?.life === 'dying') return step(leaveScope(view, id, unit)) ?? idle;
    }
    // Seed 003 Units: "when a subordinate unit is Dead, it is removed from state by its principal's
    // UA", whatever the principal's own life (a container relation may have taken the sidecar).
    for (const sub of view.subordinatesOf(unit)) {
      if (view.unit(sub)?.life === 'dead') return { kind: 'txn', txn: removeUnit(view, sub) };
    }
    if (u.principal !== null) {
      const p = view.unit(u.principal);
      const rel = view.relation(principalRelationOf(view, u.service)?.id ?? '');
      if (p?.life !== 'alive' || !rel || rel.life !== 'alive')
        return step(destroySidecarUnit(view, unit, now)) ?? idle;
    } else if (u.cell_id !== null) {
      for (const svc of view.services()) {
        if (!svc.subordinate || svc.life !== 'alive') continue;
        const rel = principalRelationOf(view, svc.name);
        if (
          rel?.life === 'alive' &&
          rel.endpoints[0] === u.service &&
          !view.unit(unitName(svc.name, u.index))
        ) {
          return { kind: 'txn', txn: addSidecarUnit(view, unit, svc.name) };
        }
      }
    }
    const scope = scopesToEnter(view, unit)[0];
    return scope === undefined ? idle : (step(enterScope(view, scope, unit)) ?? idle);
  }
  if (u.life === 'dying') {
    const scope = first(view.scopesOfUnit(unit));
    if (scope !== undefined) return step(leaveScope(view, scope, unit)) ?? idle;
    for (const sub of view.subordinatesOf(unit)) {
      if (view.unit(sub)?.life === 'dead') return { kind: 'txn', txn: removeUnit(view, sub) };
    }
    const waiting = first(view.subordinatesOf(unit));
    if (waiting !== undefined) return { kind: 'wait', reason: `sidecar ${waiting} is not Dead yet` };
    return step(ensureUnitDead(view, unit)) ?? idle;
  }
  // Dead: the principal's UA (sidecar) or the cell's MA (principal) removes it.
  return idle;
}

/**
 * Seed 003 Agents, the machine agent (the cell's rep): "detecting its principals' Dead states and:
 * removing the principals, possibly removing their services", and "detecting its machine's Dying
 * state, and setting it to Dead". Units never placed on a cell are stepped with `cell` null by the
 * server on their behalf.
 */
export function cellAgentStep(
  view: ModelView,
  cell: string | null,
  unassigned: Iterable<string> = [],
): AgentStep {
  const units = cell === null ? unassigned : view.unitsOnCell(cell);
  for (const name of units) {
    const u = view.unit(name);
    if (u && u.principal === null && u.life === 'dead') return { kind: 'txn', txn: removeUnit(view, name) };
  }
  if (cell === null) return idle;
  const c = view.cell(cell);
  if (c?.life === 'dying') {
    if (view.count('units-on-cell', cell) > 0)
      return { kind: 'wait', reason: `units are still on cell ${cell}` };
    return step(ensureCellDead(view, cell)) ?? idle;
  }
  return idle;
}

/** Seed 003 Agents, the provisioning agent: "detecting machines' Dead states, and removing the machines." */
export function provisionerStep(view: ModelView, cell: string): AgentStep {
  return view.cell(cell)?.life === 'dead' ? { kind: 'txn', txn: removeCell(view, cell) } : idle;
}
