import { NotFoundError } from '../core/index.js';
import { ModelRuleError, NameInUseError } from './model-errors.js';
import type { CellDoc, ModelTxn, ModelView, UnitDoc } from './model-types.js';
import { absent, countEq, lifeIn, part, setLife, txn } from './txn-parts.js';

function mustCell(view: ModelView, id: string): CellDoc {
  const cell = view.cell(id);
  if (!cell) throw new NotFoundError('cell', id);
  return cell;
}

/** Seed 003 Machines: "Like everything else, a machine starts out Alive." */
export function addCell(view: ModelView, id: string): ModelTxn {
  const existing = view.cell(id);
  if (existing) throw new NameInUseError('cell', id, existing.life);
  return txn('add-cell', part([absent('cell', id)], [{ op: 'insert-cell', cell: { id, life: 'alive' } }]));
}

/**
 * Seed 003 Machines: "While it is Alive, principal units can be assigned to it." Sidecars are never
 * assigned on their own: they follow their principal (see `addSidecarUnit`).
 */
export function assignUnitToCell(view: ModelView, unit: string, cellId: string): ModelTxn {
  const u: UnitDoc | undefined = view.unit(unit);
  if (!u) throw new NotFoundError('unit', unit);
  const cell = mustCell(view, cellId);
  if (u.principal !== null)
    throw new ModelRuleError('assign', `unit ${unit}`, 'a sidecar goes where its principal is');
  if (cell.life !== 'alive')
    throw new ModelRuleError('assign', `unit ${unit}`, `cell ${cellId} is ${cell.life}`);
  if (u.life !== 'alive') throw new ModelRuleError('assign', `unit ${unit}`, `it is ${u.life}`);
  if (u.cell_id !== null)
    throw new ModelRuleError('assign', `unit ${unit}`, `it is already on cell ${u.cell_id}`);
  return txn(
    'assign-unit',
    part(
      [
        lifeIn('cell', cellId, 'alive'),
        lifeIn('unit', unit, 'alive'),
        { kind: 'unit-cell', unit, cell_id: null },
      ],
      [{ op: 'assign-unit', unit, cell_id: cellId }],
    ),
  );
}

/**
 * A unit is one instance index (DESIGN.md), so when its instance is restarted on another cell (its
 * cell vanished or was drained) the unit moves with it, and its sidecars with it: they must stay on
 * their principal's cell. Asserts the unit is still where it was read, so a move built on a stale
 * view aborts; the old cell loses the unit and may then die.
 */
export function moveUnitToCell(view: ModelView, unit: string, cellId: string): ModelTxn | null {
  const u: UnitDoc | undefined = view.unit(unit);
  if (!u) throw new NotFoundError('unit', unit);
  const cell = mustCell(view, cellId);
  if (u.principal !== null)
    throw new ModelRuleError('move', `unit ${unit}`, 'a sidecar goes where its principal is');
  if (u.life !== 'alive') throw new ModelRuleError('move', `unit ${unit}`, `it is ${u.life}`);
  if (cell.life !== 'alive')
    throw new ModelRuleError('move', `unit ${unit}`, `cell ${cellId} is ${cell.life}`);
  if (u.cell_id === null)
    throw new ModelRuleError('move', `unit ${unit}`, 'it is not assigned yet (assign it instead)');
  if (u.cell_id === cellId) return null;
  const subordinates = [...view.subordinatesOf(unit)].sort();
  return txn(
    'move-unit',
    part(
      [
        lifeIn('cell', cellId, 'alive'),
        lifeIn('unit', unit, 'alive'),
        { kind: 'unit-cell', unit, cell_id: u.cell_id },
        ...subordinates.map((s) => ({ kind: 'unit-cell' as const, unit: s, cell_id: u.cell_id })),
      ],
      [unit, ...subordinates].map((name) => ({ op: 'assign-unit' as const, unit: name, cell_id: cellId })),
    ),
  );
}

/**
 * Seed 003 Machines: "When no principal units are assigned to it, it can be destroyed ... This will
 * set the machine to Dying, but will fail when units are assigned." Already Dying or Dead: nothing to
 * do (null), so a retried destroy is harmless. Nothing cascades from a cell, so no cleanup job.
 */
export function destroyCell(view: ModelView, id: string): ModelTxn | null {
  const cell = mustCell(view, id);
  if (cell.life !== 'alive') return null;
  const units = view.count('units-on-cell', id);
  if (units > 0) throw new ModelRuleError('destroy', `cell ${id}`, `${units} unit(s) are assigned to it`);
  return txn(
    'destroy-cell',
    part([lifeIn('cell', id, 'alive'), countEq('units-on-cell', id, 0)], [setLife('cell', id, 'dying')]),
  );
}

/**
 * Seed 003 Machines: "Once a machine has been set to Dying, the corresponding Machine Agent (MA) is
 * responsible for setting it to Dead." The MA is the cell's rep.
 */
export function ensureCellDead(view: ModelView, id: string): ModelTxn | null {
  const cell = mustCell(view, id);
  if (cell.life === 'dead') return null;
  if (cell.life === 'alive') throw new ModelRuleError('set Dead', `cell ${id}`, 'it is not Dying');
  const units = view.count('units-on-cell', id);
  if (units > 0) throw new ModelRuleError('set Dead', `cell ${id}`, `${units} unit(s) are still on it`);
  return txn(
    'cell-dead',
    part([lifeIn('cell', id, 'dying'), countEq('units-on-cell', id, 0)], [setLife('cell', id, 'dead')]),
  );
}

/**
 * Seed 003 Machines: "When the Provisioning Agent (PA) observes that the machine has become Dead, it
 * releases the underlying instance ... and removes the machine object from state."
 */
export function removeCell(view: ModelView, id: string): ModelTxn {
  const cell = mustCell(view, id);
  if (cell.life !== 'dead') throw new ModelRuleError('remove', `cell ${id}`, `it is ${cell.life}, not Dead`);
  return txn(
    'remove-cell',
    part(
      [lifeIn('cell', id, 'dead'), countEq('units-on-cell', id, 0)],
      [{ op: 'remove', entity: { kind: 'cell', id } }],
    ),
  );
}
