import { ensureCellDead, removeCell } from './cell-rules.js';
import type { ModelTxn, ModelView } from './model-types.js';
import { enterScope, leaveScope, scopesToEnter } from './relation-rules.js';
import { addSidecarUnit, destroySidecarUnit, principalRelationOf } from './sidecar-rules.js';
import { first, unitName } from './txn-parts.js';
import { ensureUnitDead, removeUnit, unitDyingForService } from './unit-rules.js';

/**
 * One thing an agent decided to do, as data. An agent that runs away from the store (a cell's rep)
 * sends its actions to the server, which rebuilds each transaction from its own current view with
 * `agentActionTxn` (so a stale agent view costs a refused assert, never a wrong write).
 */
export type AgentAction =
  /** Seed 003 Agents (UA): "detecting its service's Dying state, and setting its own Dying state". */
  | { readonly kind: 'unit-dying'; readonly unit: string }
  | { readonly kind: 'enter-scope'; readonly unit: string; readonly relation: string }
  | { readonly kind: 'leave-scope'; readonly unit: string; readonly relation: string }
  /** A principal's UA creates its sidecar unit in an Alive sidecar service. */
  | { readonly kind: 'add-sidecar'; readonly unit: string; readonly service: string }
  /** A sidecar's UA: its principal or its container relation is past Alive. */
  | { readonly kind: 'destroy-sidecar'; readonly unit: string }
  | { readonly kind: 'unit-dead'; readonly unit: string }
  /** A Dead sidecar (by its principal's UA) or a Dead principal (by its cell's MA). */
  | { readonly kind: 'remove-unit'; readonly unit: string }
  /** Seed 003 Agents (MA): "detecting its machine's Dying state, and setting it to Dead". */
  | { readonly kind: 'cell-dead'; readonly cell: string }
  /** The provisioning agent: "detecting machines' Dead states, and removing the machines". */
  | { readonly kind: 'remove-cell'; readonly cell: string };

/**
 * The transaction an action stands for, built against `view`; null when there is nothing to do any
 * more (another agent got there first). A rule that refuses (the action is illegal in this view)
 * throws its typed error.
 */
export function agentActionTxn(view: ModelView, action: AgentAction, now: Date): ModelTxn | null {
  switch (action.kind) {
    case 'unit-dying':
      return view.unit(action.unit) ? unitDyingForService(view, action.unit, now) : null;
    case 'enter-scope':
      return view.unit(action.unit) ? enterScope(view, action.relation, action.unit) : null;
    case 'leave-scope':
      return view.isInScope(action.relation, action.unit)
        ? leaveScope(view, action.relation, action.unit)
        : null;
    case 'add-sidecar':
      return view.unit(unitName(action.service, view.unit(action.unit)?.index ?? -1))
        ? null
        : addSidecarUnit(view, action.unit, action.service);
    case 'destroy-sidecar':
      return view.unit(action.unit) ? destroySidecarUnit(view, action.unit, now) : null;
    case 'unit-dead':
      return view.unit(action.unit) ? ensureUnitDead(view, action.unit) : null;
    case 'remove-unit':
      return view.unit(action.unit) ? removeUnit(view, action.unit) : null;
    case 'cell-dead':
      return view.cell(action.cell) ? ensureCellDead(view, action.cell) : null;
    case 'remove-cell':
      return view.cell(action.cell) ? removeCell(view, action.cell) : null;
  }
}

/**
 * The cell whose agent may take an action: the unit's cell (a sidecar is on its principal's), or the
 * cell itself. Null for units not on any cell and for the provisioner's action, which the server
 * takes.
 */
export function agentActionCell(view: ModelView, action: AgentAction): string | null {
  if (action.kind === 'remove-cell') return null;
  if (action.kind === 'cell-dead') return action.cell;
  return view.unit(action.unit)?.cell_id ?? null;
}

/** What an agent (berth's rep, for its cell and its units) should do next. */
export type AgentStep =
  | { readonly kind: 'txn'; readonly action: AgentAction; readonly txn: ModelTxn }
  | { readonly kind: 'wait'; readonly reason: string }
  | { readonly kind: 'idle' };

const idle: AgentStep = { kind: 'idle' };

/** The step for an action, or null when its rule has nothing to do in this view. */
function act(view: ModelView, action: AgentAction, now: Date): AgentStep | null {
  const txn = agentActionTxn(view, action, now);
  return txn ? { kind: 'txn', action, txn } : null;
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
    const dying = act(view, { kind: 'unit-dying', unit }, now);
    if (dying) return dying;
    // Seed 003 Relations: "When a relation becomes Dying, the UAs of units that have entered its
    // scope are responsible for cleanly departing the relation".
    for (const id of view.scopesOfUnit(unit)) {
      if (view.relation(id)?.life === 'dying')
        return act(view, { kind: 'leave-scope', unit, relation: id }, now) ?? idle;
    }
    // Seed 003 Units: "when a subordinate unit is Dead, it is removed from state by its principal's
    // UA", whatever the principal's own life (a container relation may have taken the sidecar).
    for (const sub of view.subordinatesOf(unit)) {
      if (view.unit(sub)?.life === 'dead') return act(view, { kind: 'remove-unit', unit: sub }, now) ?? idle;
    }
    if (u.principal !== null) {
      const p = view.unit(u.principal);
      const rel = view.relation(principalRelationOf(view, u.service)?.id ?? '');
      if (p?.life !== 'alive' || !rel || rel.life !== 'alive')
        return act(view, { kind: 'destroy-sidecar', unit }, now) ?? idle;
    } else if (u.cell_id !== null) {
      for (const svc of view.services()) {
        if (!svc.subordinate || svc.life !== 'alive') continue;
        const rel = principalRelationOf(view, svc.name);
        if (
          rel?.life === 'alive' &&
          rel.endpoints[0] === u.service &&
          !view.unit(unitName(svc.name, u.index))
        ) {
          return act(view, { kind: 'add-sidecar', unit, service: svc.name }, now) ?? idle;
        }
      }
    }
    // Seed 003 Agents: "all UAs are responsible for entering relevant relation scopes", and a UA
    // runs on its unit's machine: an unassigned unit has no agent yet, so it enters nothing.
    if (u.cell_id === null) return idle;
    const scope = scopesToEnter(view, unit)[0];
    return scope === undefined
      ? idle
      : (act(view, { kind: 'enter-scope', unit, relation: scope }, now) ?? idle);
  }
  if (u.life === 'dying') {
    const scope = first(view.scopesOfUnit(unit));
    if (scope !== undefined) return act(view, { kind: 'leave-scope', unit, relation: scope }, now) ?? idle;
    for (const sub of view.subordinatesOf(unit)) {
      if (view.unit(sub)?.life === 'dead') return act(view, { kind: 'remove-unit', unit: sub }, now) ?? idle;
    }
    const waiting = first(view.subordinatesOf(unit));
    if (waiting !== undefined) return { kind: 'wait', reason: `sidecar ${waiting} is not Dead yet` };
    return act(view, { kind: 'unit-dead', unit }, now) ?? idle;
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
  now: Date = new Date(),
): AgentStep {
  const units = cell === null ? unassigned : view.unitsOnCell(cell);
  for (const name of units) {
    const u = view.unit(name);
    if (u && u.principal === null && u.life === 'dead')
      return act(view, { kind: 'remove-unit', unit: name }, now) ?? idle;
  }
  if (cell === null) return idle;
  const c = view.cell(cell);
  if (c?.life === 'dying') {
    if (view.count('units-on-cell', cell) > 0)
      return { kind: 'wait', reason: `units are still on cell ${cell}` };
    return act(view, { kind: 'cell-dead', cell }, now) ?? idle;
  }
  return idle;
}

/** Seed 003 Agents, the provisioning agent: "detecting machines' Dead states, and removing the machines." */
export function provisionerStep(view: ModelView, cell: string, now: Date = new Date()): AgentStep {
  return view.cell(cell)?.life === 'dead' ? (act(view, { kind: 'remove-cell', cell }, now) ?? idle) : idle;
}
