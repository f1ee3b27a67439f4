import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BerthError } from '../core/index.js';
import { ModelBuilder } from '../testing/model-builder.js';
import { cellAgentStep, provisionerStep } from './agent-rules.js';
import {
  addCell,
  assignUnitToCell,
  destroyCell,
  ensureCellDead,
  moveUnitToCell,
  removeCell,
} from './cell-rules.js';
import { TxnAbortedError } from './model-errors.js';
import { unitName } from './txn-parts.js';
import { addUnit, destroyUnit, ensureUnitDead } from './unit-rules.js';

const now = new Date('2024-05-01T12:00:00.000Z');

function code(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof BerthError) return err.code;
    throw err;
  }
  return 'none';
}

describe('seed 003 Machines (berth cells)', () => {
  it('"Like everything else, a machine starts out Alive"', () => {
    const m = new ModelBuilder().cell('c1');
    assert.equal(m.view.cell('c1')?.life, 'alive');
  });

  it('"While it is Alive, principal units can be assigned to it"; not once it is Dying', () => {
    const m = new ModelBuilder().cell('c1').cell('c2').service('web').units('web', 2);
    m.apply((v) => assignUnitToCell(v, unitName('web', 0), 'c1'));
    assert.equal(m.view.unit(unitName('web', 0))?.cell_id, 'c1');
    m.apply((v) => destroyCell(v, 'c2'));
    assert.equal(
      code(() => assignUnitToCell(m.view, unitName('web', 1), 'c2')),
      'conflict',
    );
  });

  it('an assignment built while the cell was Alive aborts if the cell started dying meanwhile (the race the seed cites)', () => {
    const m = new ModelBuilder().cell('c1').service('web').units('web', 1);
    const assign = assignUnitToCell(m.view, unitName('web', 0), 'c1');
    m.apply((v) => destroyCell(v, 'c1'));
    assert.throws(() => m.runner.apply(assign), TxnAbortedError);
    assert.equal(m.view.unit(unitName('web', 0))?.cell_id, null);
  });

  it('"it can be destroyed ... This will set the machine to Dying"', () => {
    const m = new ModelBuilder().cell('c1');
    m.apply((v) => destroyCell(v, 'c1'));
    assert.equal(m.view.cell('c1')?.life, 'dying');
    assert.equal(destroyCell(m.view, 'c1'), null, 'destroying again changes nothing');
  });

  it('"... but will fail when units are assigned": a cell with units cannot start dying', () => {
    const m = new ModelBuilder().cell('c1').service('web').units('web', 1, ['c1']);
    assert.throws(
      () => destroyCell(m.view, 'c1'),
      (err: unknown) => err instanceof BerthError && err.code === 'conflict' && /1 unit/.test(err.message),
    );
    assert.equal(m.view.cell('c1')?.life, 'alive');
  });

  it('a destroy built on an empty cell aborts if a unit was assigned meanwhile', () => {
    const m = new ModelBuilder().cell('c1').service('web').units('web', 1);
    const destroy = destroyCell(m.view, 'c1')!;
    m.apply((v) => assignUnitToCell(v, unitName('web', 0), 'c1'));
    assert.throws(() => m.runner.apply(destroy), TxnAbortedError);
    assert.equal(m.view.cell('c1')?.life, 'alive');
  });

  it('"Once a machine has been set to Dying, the corresponding Machine Agent (MA) is responsible for setting it to Dead"', () => {
    const m = new ModelBuilder().cell('c1');
    assert.equal(
      code(() => ensureCellDead(m.view, 'c1')),
      'conflict',
      'not while Alive',
    );
    m.apply((v) => destroyCell(v, 'c1'));
    const s = cellAgentStep(m.view, 'c1');
    assert.equal(s.kind, 'txn');
    if (s.kind === 'txn') m.runner.apply(s.txn);
    assert.equal(m.view.cell('c1')?.life, 'dead');
    assert.equal(ensureCellDead(m.view, 'c1'), null);
  });

  it('"When the Provisioning Agent (PA) observes that the machine has become Dead, it ... removes the machine"', () => {
    const m = new ModelBuilder().cell('c1');
    assert.equal(provisionerStep(m.view, 'c1').kind, 'idle');
    assert.equal(
      code(() => removeCell(m.view, 'c1')),
      'conflict',
    );
    m.apply((v) => destroyCell(v, 'c1'));
    m.apply((v) => ensureCellDead(v, 'c1'));
    const s = provisionerStep(m.view, 'c1');
    assert.equal(s.kind, 'txn');
    if (s.kind === 'txn') m.runner.apply(s.txn);
    assert.equal(m.view.cell('c1'), undefined);
  });

  it('a cell id cannot be reused until the old cell is removed', () => {
    const m = new ModelBuilder().cell('c1');
    m.apply((v) => destroyCell(v, 'c1'));
    assert.equal(
      code(() => addCell(m.view, 'c1')),
      'already_exists',
    );
    m.apply((v) => ensureCellDead(v, 'c1'));
    m.apply((v) => removeCell(v, 'c1'));
    m.apply((v) => addCell(v, 'c1'));
    assert.equal(m.view.cell('c1')?.life, 'alive');
  });

  it('the MA removes Dead principals on its cell, then the cell may die', () => {
    const m = new ModelBuilder().cell('c1').service('web').units('web', 1, ['c1']);
    const u = unitName('web', 0);
    m.apply((v) => destroyUnit(v, u, now));
    m.apply((v) => ensureUnitDead(v, u));
    const s = cellAgentStep(m.view, 'c1');
    assert.equal(s.kind, 'txn');
    if (s.kind === 'txn') m.runner.apply(s.txn);
    assert.equal(m.view.unit(u), undefined);
    m.apply((v) => destroyCell(v, 'c1'));
    assert.equal(m.view.cell('c1')?.life, 'dying');
    assert.equal(
      code(() => addUnit(m.view, 'web', 0)),
      'none',
    );
  });

  it('a unit follows its instance to another cell, its sidecar with it; the old cell may then die', () => {
    const web0 = unitName('web', 0);
    const m = new ModelBuilder()
      .cell('c1')
      .cell('c2')
      .service('web')
      .service('log', true)
      .units('web', 1, ['c1'])
      .relate('web', 'log', 'container')
      .sidecar(web0, 'log');
    m.apply((v) => moveUnitToCell(v, web0, 'c2'));
    assert.equal(m.view.unit(web0)?.cell_id, 'c2');
    assert.equal(m.view.unit(unitName('log', 0))?.cell_id, 'c2', 'the sidecar stays beside its principal');
    assert.equal(m.view.count('units-on-cell', 'c1'), 0);
    m.apply((v) => destroyCell(v, 'c1'));
    assert.equal(m.view.cell('c1')?.life, 'dying');
    assert.equal(moveUnitToCell(m.view, web0, 'c2'), null, 'already there: nothing to do');
  });

  it('a move built on a stale view aborts; sidecars, unassigned units and dying cells are refused', () => {
    const web0 = unitName('web', 0);
    const m = new ModelBuilder()
      .cell('c1')
      .cell('c2')
      .cell('c3')
      .service('web')
      .service('log', true)
      .units('web', 2, ['c1'])
      .relate('web', 'log', 'container')
      .sidecar(web0, 'log');
    const stale = moveUnitToCell(m.view, web0, 'c2');
    m.apply((v) => moveUnitToCell(v, web0, 'c3'));
    assert.ok(stale);
    assert.throws(() => m.runner.apply(stale), TxnAbortedError);
    assert.equal(m.view.unit(web0)?.cell_id, 'c3');
    assert.equal(
      code(() => moveUnitToCell(m.view, unitName('log', 0), 'c1')),
      'conflict',
    );
    m.apply((v) => destroyUnit(v, unitName('web', 1), now));
    assert.equal(
      code(() => moveUnitToCell(m.view, unitName('web', 1), 'c2')),
      'conflict',
    );
    m.apply((v) => destroyCell(v, 'c2'));
    assert.equal(
      code(() => moveUnitToCell(m.view, web0, 'c2')),
      'conflict',
    );
    assert.equal(
      code(() => moveUnitToCell(m.view, web0, 'nope')),
      'not_found',
    );
  });
});
